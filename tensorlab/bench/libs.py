"""The implementations the benchmark compares, behind one small adapter each, so every workload is
written once: tensorlab (on each device), NumPy (CPU), CuPy (its own ufuncs, reductions and
cuBLAS matmul) and torch (on each device), when installed.

An adapter moves host (NumPy) data onto its device (`put`), allocates outputs (`empty`), fetches
results (`get`), and runs the operations the workloads are made of. Outputs are preallocated and
written with out= where the library allows it, so every implementation is timed on the kernel,
not on its allocator."""
from __future__ import annotations

import importlib

import numpy as np

import tensorlab as tl
from tensorlab import backends

from .threads import tensorlab_threads


def _softmax_composed(xp, x):
    e = xp.exp(x - x.max(axis=-1, keepdims=True))
    e /= e.sum(axis=-1, keepdims=True)
    return e


class Lib:
    """An implementation on one device. `name` is what the table shows, `device` the tensorlab
    device string its work runs on (the Timer times it there)."""

    name = ""
    baseline = True

    def __init__(self, device="cpu"):
        self.device = device

    @property
    def version(self):
        return getattr(self.xp, "__version__", "")

    def put(self, host):
        return self.xp.asarray(host)

    def get(self, x):
        return np.asarray(x)

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype=dtype)

    def add(self, a, b, out):
        return self.xp.add(a, b, out=out)

    def copyto(self, dst, src):
        self.xp.copyto(dst, src, casting="unsafe")
        return dst

    def where(self, m, a, b):
        return self.xp.where(m, a, b)

    def lt(self, a, b):
        return a < b

    def t(self, x):
        return x.T

    def sum(self, x):
        return x.sum()

    def cumsum(self, x):
        return self.xp.cumsum(x, 0)  # NumPy's axis, torch's dim, positionally

    def softmax(self, x):
        return _softmax_composed(self.xp, x)

    def cummax(self, x):
        """The running maximum's values (NumPy and CuPy have no index form)."""
        return self.xp.maximum.accumulate(x)

    def lstm(self, h):
        """A callable running suite._lstm_inputs' layer forward from zero states: the input projection as
        one product, then per step the product with W_hh and the gate math (composed array calls)."""
        xp = self.xp
        x, w_ih, w_hh = (self.put(h[k]) for k in ("x", "w_ih", "w_hh"))
        bias = self.put(h["b_ih"] + h["b_hh"])

        def run():
            steps, batch, n = x.shape[0], x.shape[1], w_hh.shape[1]
            gi = xp.matmul(x, w_ih.T) + bias
            hs = xp.zeros((batch, n), dtype=x.dtype)
            c = xp.zeros((batch, n), dtype=x.dtype)
            out = xp.empty((steps, batch, n), dtype=x.dtype)
            for t in range(steps):
                g = gi[t] + xp.matmul(hs, w_hh.T)
                i, f, gg, o = (1 / (1 + xp.exp(-g[:, :n])), 1 / (1 + xp.exp(-g[:, n:2 * n])),
                               xp.tanh(g[:, 2 * n:3 * n]), 1 / (1 + xp.exp(-g[:, 3 * n:])))
                c = f * c + i * gg
                hs = o * xp.tanh(c)
                out[t] = hs
            return out
        return run

    def matmul(self, a, b, out):
        return self.xp.matmul(a, b, out=out)

    def threads(self, workload=None):
        """The CPU threads this library runs `workload` on (None: not a CPU library, or a count it
        does not expose)."""
        return None

    def __repr__(self):
        return f"{self.name} ({self.device})"


class NumpyLib(Lib):
    name = "numpy"
    xp = np

    def put(self, host):
        return np.array(host, copy=True)

    def threads(self, workload=None):
        return None if (workload or "").startswith("matmul") else 1  # matmul: BLAS's threads, which NumPy does not expose


class TensorlabLib(Lib):
    name = "tensorlab"
    baseline = False
    xp = tl

    @property
    def version(self):
        return tl.__version__

    def put(self, host):
        return tl.tensor(host, device=self.device)

    def get(self, x):
        return x.cpu().numpy()

    def empty(self, shape, dtype):
        return tl.empty(shape, dtype=tl.dtypes.from_numpy_dtype(np.dtype(dtype)), device=self.device)

    def copyto(self, dst, src):
        return dst.copy_(src)

    def t(self, x):
        return x.t()

    def softmax(self, x):
        return tl.softmax(x, -1)

    def cummax(self, x):
        return tl.cummax(x, 0).values

    def lstm(self, h):
        return _module_lstm(tl, self, h)

    def threads(self, workload=None):
        return tensorlab_threads() if self.device == "cpu" else None


class TorchLib(Lib):
    name = "torch"

    def __init__(self, torch, device="cpu"):
        super().__init__(device)
        self.xp = torch

    def put(self, host):
        if host.dtype.name == "bfloat16":  # an ml_dtypes array: torch takes its bits
            return self.xp.from_numpy(np.array(host, copy=True).view(np.int16)).view(self.xp.bfloat16).to(self.device)
        return self.xp.from_numpy(np.array(host, copy=True)).to(self.device)

    def get(self, x):
        if x.dtype == self.xp.bfloat16:  # float32 holds every bfloat16 exactly
            import ml_dtypes
            return x.float().cpu().numpy().astype(ml_dtypes.bfloat16)
        return x.cpu().numpy()

    def empty(self, shape, dtype):
        return self.xp.empty(shape, dtype=getattr(self.xp, np.dtype(dtype).name), device=self.device)

    def copyto(self, dst, src):
        return dst.copy_(src)

    def t(self, x):
        return x.t()

    def softmax(self, x):
        return self.xp.softmax(x, -1)

    def cummax(self, x):
        return self.xp.cummax(x, 0).values

    def lstm(self, h):
        return _module_lstm(self.xp, self, h)

    def threads(self, workload=None):
        return self.xp.get_num_threads() if self.device == "cpu" else None


class CupyLib(Lib):
    name = "cupy"

    def __init__(self, cupy, device="cuda:0"):
        super().__init__(device)
        self.xp = cupy
        self._index = tl.device(device).index or 0
        try:
            from cupyx.scipy.special import softmax
        except ImportError:  # older CuPy: the composed form (same passes NumPy makes)
            softmax = None
        self._softmax = softmax

    def put(self, host):
        with self.xp.cuda.Device(self._index):
            return self.xp.asarray(host)

    def get(self, x):
        return self.xp.asnumpy(x)

    def empty(self, shape, dtype):
        with self.xp.cuda.Device(self._index):
            return self.xp.empty(shape, dtype=dtype)

    def softmax(self, x):
        if self._softmax is None:
            return _softmax_composed(self.xp, x)
        return self._softmax(x, axis=-1)


def _module_lstm(xp, lib, h):
    """nn.LSTM of torch or tensorlab (xp) holding suite._lstm_inputs' parameters, run without autograd."""
    n = h["w_hh"].shape[1]
    m = xp.nn.LSTM(n, n)
    with xp.no_grad():
        for name in ("w_ih", "w_hh", "b_ih", "b_hh"):
            getattr(m, f"{name.replace('w_', 'weight_').replace('b_', 'bias_')}_l0").copy_(lib.put(h[name]))
    m = m.to(lib.device)
    x = lib.put(h["x"])

    def run():
        with xp.no_grad():
            return m(x)[0]
    return run


def _optional(name):
    try:
        return importlib.import_module(name)
    except Exception:  # not installed, or installed but broken (missing CUDA libraries)
        return None


def torch_module():
    return _optional("torch")


def torch_has_cuda(torch):
    try:
        return bool(torch.cuda.is_available())
    except Exception:
        return False


def libraries(device, baselines=None):
    """[tensorlab, baselines...] for a device string ("cpu", "cuda:0"). `baselines`: the names to
    include (None: every one installed and usable on that device)."""
    want = (lambda n: True) if baselines is None else (lambda n: n in baselines)
    out = [TensorlabLib(device)]
    if device == "cpu":
        if want("numpy"):
            out.append(NumpyLib(device))
        torch = torch_module() if want("torch") else None
        if torch is not None:
            out.append(TorchLib(torch, device))
        return out
    if want("cupy") and backends.cuda_unavailable_reason() is None:
        cupy = _optional("cupy")
        if cupy is not None:
            out.append(CupyLib(cupy, device))
    torch = torch_module() if want("torch") else None
    if torch is not None and torch_has_cuda(torch):
        out.append(TorchLib(torch, device))
    return out


BASELINES = ("numpy", "cupy", "torch")
