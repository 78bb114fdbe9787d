"""GradScaler: dynamic loss scaling, as torch.amp.GradScaler.

The scale and the growth tracker live on the device as tensors. unscale_ multiplies each gradient
by 1/scale and folds "has a non-finite value" into one found_inf tensor per device, on the device
(no host wait per parameter); step() reads the found_inf flags once (one host wait, through
Tensor.item -> sync.host_wait, as torch's `.item()`) to decide whether to run optimizer.step();
update() computes the next scale on the device (torch's _amp_update_scale_)."""
from __future__ import annotations

import warnings
from enum import Enum

from .. import dtypes
from ..tensor import Tensor


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = str(device)
        self._enabled = enabled
        if self._device.startswith("cuda") and enabled:
            from .. import cuda
            if cuda.device_count() == 0:  # (the emulation driver's devices count: they run the CUDA path)
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              UserWarning, stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise ValueError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise ValueError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = {}

    def _lazy_init_scale_growth_tracker(self, dev):
        from ..ops.creation import full
        self._scale = full((), self._init_scale, dtype=dtypes.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=dtypes.int32, device=dev)

    def _state(self, optimizer):
        return self._per_optimizer_states.setdefault(id(optimizer), _refresh_per_optimizer_state())

    def scale(self, outputs):
        """outputs * scale (a tensor, or tensors in nested lists/tuples/iterables)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(device=outputs.device, non_blocking=True)

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(apply_scale(v) for v in val)
            if hasattr(val, "__iter__"):
                return map(apply_scale, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")
        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        from ..autograd.grad_mode import no_grad
        from ..ops.creation import zeros
        per_device = {}
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    g = param.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is dtypes.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    key = str(g.device)
                    if key not in per_device:
                        per_device[key] = zeros((), dtype=dtypes.float32, device=g.device)
                    flag = per_device[key]
                    # found_inf = max(found_inf, any(!isfinite(g))): all on the device
                    flag.copy_(flag.maximum(g.isfinite().logical_not().any().to(dtypes.float32)))
                    g.mul_(inv_scale.to(device=g.device, dtype=dtypes.float32).to(g.dtype)
                           if g.dtype is not dtypes.float32 else inv_scale.to(device=g.device))
        for key, flag in per_device.items():
            per_device[key] = flag.maximum(found_inf.to(device=flag.device))
        return per_device

    def unscale_(self, optimizer):
        """Divide optimizer's gradients by the scale, in place, once per step; records per device
        whether any gradient held inf/NaN (on the device, no host wait)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._state(optimizer)
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        from ..ops.creation import full
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=dtypes.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        # the one host wait of a step: torch's `if not sum(v.item() ...)`
        found = sum(v.item() for v in state["found_inf_per_device"].values())
        if not found:
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """unscale_ (if not done yet), then optimizer.step() unless a gradient held inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._state(optimizer)
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """The next scale: backoff_factor * scale if any step this iteration found inf/NaN (growth
        tracker reset), else growth_factor * scale after growth_interval clean steps; computed on
        the device. new_scale (a float or a 1-element float32 tensor) sets it instead."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if not (isinstance(new_scale, Tensor) and new_scale.numel() == 1 and not new_scale.requires_grad
                        and new_scale.dtype is dtypes.float32):
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [f.to(device=_scale.device) for s in self._per_optimizer_states.values()
                          for f in s["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found_inf = found_infs[0]
            for f in found_infs[1:]:
                found_inf = found_inf + f
            self._update_scale_(found_inf)
        self._per_optimizer_states = {}

    def _update_scale_(self, found_inf):
        from ..ops import elementwise as ew
        bad = found_inf > 0
        tracker = ew.where(bad, 0, self._growth_tracker + 1).to(dtypes.int32)
        grow = tracker >= self._growth_interval
        grown = self._scale * self._growth_factor
        # torch keeps the old scale when growing it would overflow float32
        scale = ew.where(bad, self._scale * self._backoff_factor,
                         ew.where(grow & grown.isfinite(), grown, self._scale))
        self._scale.copy_(scale)
        self._growth_tracker.copy_(ew.where(grow, 0, tracker))

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (reads the device: a host wait, as torch's)."""
        if not self._enabled:
            return 1.0
        return self._init_scale if self._scale is None else self._scale.item()

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker.item()

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
