"""DataParallel (torch.nn.DataParallel): without a CUDA device, or with one device id, it runs the
wrapped module (moved to that device) on the whole input. With several device ids it splits every
tensor argument along `dim` into one chunk per device, calls the module once per device with its
parameters and buffers copied there (func.functional_call with differentiable `.to` copies, so the
gradients reach the module's own parameters, as torch's replicas' Broadcast does), and gathers the
outputs on output_device along `dim`. The per-device calls run one after another on the host thread
(each launch is asynchronous on its device's stream), not in torch's one thread per device. The
first chunk runs through the module itself, so in-place updates on device_ids[0] (BatchNorm's running
statistics) persist and those of the other replicas are lost, as torch documents."""
from __future__ import annotations

import warnings

from ... import cuda as _cuda
from ...device import device as _device
from ...tensor import Tensor
from ..module import Module


def _device_index(d):
    if isinstance(d, int):
        return d
    dev = _device(d) if not isinstance(d, _device) else d
    if dev.type != "cuda":
        raise ValueError(f"DataParallel: expected a cuda device or index in device_ids, got {d!r}")
    return dev.index if dev.index is not None else _cuda.current_device()


def _scatter(obj, n, dim):
    """obj split into n pieces: tensors chunked along dim, containers element-wise, others repeated."""
    if isinstance(obj, Tensor):
        return list(obj.chunk(n, dim))
    if isinstance(obj, (list, tuple)) and obj:
        parts = [_scatter(v, n, dim) for v in obj]
        k = min(len(p) for p in parts)
        return [type(obj)(p[i] for p in parts) if not hasattr(obj, "_fields") else type(obj)(*(p[i] for p in parts))
                for i in range(k)]
    if isinstance(obj, dict) and obj:
        parts = {key: _scatter(v, n, dim) for key, v in obj.items()}
        k = min(len(p) for p in parts.values())
        return [type(obj)((key, p[i]) for key, p in parts.items()) for i in range(k)]
    return [obj] * n


def _to(obj, device):
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_to(v, device) for v in obj) if not hasattr(obj, "_fields") else type(obj)(
            *(_to(v, device) for v in obj))
    if isinstance(obj, dict):
        return type(obj)((k, _to(v, device)) for k, v in obj.items())
    return obj


def _gather(outputs, device, dim):
    from ...ops.shape import cat
    first = outputs[0]
    if isinstance(first, Tensor):
        if first.dim() == 0:
            warnings.warn("Was asked to gather along dimension 0, but all input tensors were scalars; will instead "
                          "unsqueeze and return a vector.", stacklevel=3)
            return cat([o.to(device).reshape(1) for o in outputs], 0)
        return cat([o.to(device) for o in outputs], dim)
    if first is None:
        return None
    if isinstance(first, dict):
        return type(first)((k, _gather([o[k] for o in outputs], device, dim)) for k in first)
    if isinstance(first, (list, tuple)):
        items = [_gather([o[i] for o in outputs], device, dim) for i in range(len(first))]
        return type(first)(*items) if hasattr(first, "_fields") else type(first)(items)
    return outputs


class DataParallel(Module):
    """Single-process data parallelism over the given CUDA devices (see the module docstring)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if _cuda.device_count() == 0:  # no CUDA device (the emulation driver's count as one, as a GPU's)
            self.module = module
            self.device_ids = []
            return
        if device_ids is None:
            device_ids = list(range(_cuda.device_count()))
        if not device_ids:
            raise RuntimeError("no available devices were found")
        if output_device is None:
            output_device = device_ids[0]
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(output_device)
        self.src_device_obj = _device(f"cuda:{self.device_ids[0]}")
        if len(self.device_ids) == 1:
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        for t in list(self.module.parameters()) + list(self.module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError(f"module must have its parameters and buffers on device {self.src_device_obj} "
                                   f"(device_ids[0]) but found one of them on device: {t.device}")
        if len(self.device_ids) == 1:
            dev = self.src_device_obj
            return self.module(*_to(inputs, dev), **_to(kwargs, dev))
        n = len(self.device_ids)
        arg_parts = _scatter(tuple(inputs), n, self.dim) if inputs else []
        kw_parts = _scatter(dict(kwargs), n, self.dim) if kwargs else []
        k = max(len(arg_parts), len(kw_parts), 1)
        arg_parts = arg_parts or [()] * k
        kw_parts = kw_parts or [{}] * k
        k = min(len(arg_parts), len(kw_parts))
        from ...func import functional_call
        outputs = []
        for i in range(k):
            dev = _device(f"cuda:{self.device_ids[i]}")
            if i == 0:
                outputs.append(self.module(*_to(arg_parts[0], dev), **_to(kw_parts[0], dev)))
                continue
            state = {name: t.to(dev) for name, t in self.module.named_parameters()}
            state.update({name: t.to(dev) for name, t in self.module.named_buffers()})
            outputs.append(functional_call(self.module, state, tuple(_to(arg_parts[i], dev)),
                                           dict(_to(kw_parts[i], dev))))
        return _gather(outputs, _device(f"cuda:{self.output_device}"), self.dim)
