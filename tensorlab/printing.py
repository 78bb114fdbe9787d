"""repr of tensors, formatted by torch's rules (torch/_tensor_str.py) over the host values:
one width for all elements, floats in fixed point with `precision` digits (integer-valued floats
print as `1.`), scientific notation when the largest/smallest nonzero magnitude ratio exceeds
1000 or values pass 1e8 / fall under 1e-4, '...' summaries over `threshold` elements, and the
suffixes (device, dtype when not the default, size of empty tensors, grad_fn/requires_grad).
On CUDA, reading the values is a host sync point named "repr" (Tensor._host)."""
from __future__ import annotations

import contextlib
import dataclasses
import math

import numpy as np

from . import dtypes


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = _PrintOptions()

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """torch.set_printoptions: digits of precision, the element count that triggers summarization,
    items kept at each edge of a summarized dimension, characters per line, a profile ('default',
    'short', 'full'), and sci_mode (True/False forces scientific notation on/off; None chooses).
    As in torch, sci_mode is reset to None whenever it is not given."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        (PRINT_OPTS.precision, PRINT_OPTS.threshold, PRINT_OPTS.edgeitems,
         PRINT_OPTS.linewidth) = _PROFILES[profile]
    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions():
    """The current options as a dict that set_printoptions(**d) accepts."""
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily change the print options (the arguments of set_printoptions)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


def _values(arr, floating):
    """Host values as Python-formattable numbers: floats through float64 (exact for every dtype)."""
    if arr.dtype.kind == "c":
        return arr.astype(np.complex128)
    return arr.astype(np.float64) if floating else arr


class _ComplexFormatter:
    """torch's complex printing: one formatter for the real parts, one for the imaginary parts;
    an element reads `real` + signed `imag` + 'j' (the imaginary part unpadded)."""

    floating = True

    def __init__(self, arr):
        self.re = _Formatter(np.ascontiguousarray(arr.real), True)
        self.im = _Formatter(np.ascontiguousarray(arr.imag), True)

    def width(self):
        return self.re.width() + self.im.width() + 1

    def format(self, value):
        real_str = self.re.format(value.real)
        imag_str = (self.im.format(value.imag) + "j").lstrip()
        return real_str + imag_str if imag_str[0] in "+-" else real_str + "+" + imag_str


class _Formatter:
    """One element width for the whole tensor, chosen from the (summarized) values."""

    def __init__(self, arr, floating):
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = _values(arr, floating).reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)]
        if vals.size == 0:
            return
        mags = np.abs(vals)
        lo, hi = float(mags.min()), float(mags.max())
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        if PRINT_OPTS.sci_mode is None:
            self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4
        else:
            self.sci_mode = PRINT_OPTS.sci_mode
        p = PRINT_OPTS.precision
        if self.sci_mode:
            strs, extra = [f"{v:.{p}e}" for v in vals.tolist()], 0
        elif self.int_mode:
            strs, extra = [f"{v:.0f}" for v in vals.tolist()], 1  # room for the trailing '.'
        else:
            strs, extra = [f"{v:.{p}f}" for v in vals.tolist()], 0
        self.max_width = max(self.max_width, max(len(s) for s in strs) + extra)

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRINT_OPTS.precision}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRINT_OPTS.precision}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a):
    """The elements a summarized print shows (edgeitems at each end of every dimension)."""
    e = PRINT_OPTS.edgeitems
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate((a[:e], a[-e:])) if a.shape[0] > 2 * e else a
    if not e:
        return np.empty((0,) * a.ndim, dtype=a.dtype)
    rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0])) if a.shape[0] > 2 * e else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def _vector_str(a, indent, summarize, fmt):
    element_length = fmt.width() + 2  # ", " between elements
    per_line = max(1, math.floor((PRINT_OPTS.linewidth - indent) / element_length))
    e = PRINT_OPTS.edgeitems
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([fmt.format(v) for v in _values(a[:e], fmt.floating).tolist()] + [" ..."]
                + [fmt.format(v) for v in _values(a[-e:], fmt.floating).tolist()])
    else:
        data = [fmt.format(v) for v in _values(a, fmt.floating).tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with_formatter(a, indent, summarize, fmt):
    dim = a.ndim
    if dim == 0:
        return fmt.format(_values(a, fmt.floating).item())
    if dim == 1:
        return _vector_str(a, indent, summarize, fmt)
    e = PRINT_OPTS.edgeitems
    n = a.shape[0]
    if summarize and n > 2 * e:
        slices = ([_str_with_formatter(a[i], indent + 1, summarize, fmt) for i in range(e)] + ["..."]
                  + [_str_with_formatter(a[i], indent + 1, summarize, fmt) for i in range(n - e, n)])
    else:
        slices = [_str_with_formatter(a[i], indent + 1, summarize, fmt) for i in range(n)]
    return "[" + ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices) + "]"


def _tensor_str(a, floating, indent):
    summarize = a.size > PRINT_OPTS.threshold
    if a.dtype.kind == "c":
        fmt = _ComplexFormatter(_summarized(a) if summarize else a)
        return _str_with_formatter(a, indent, summarize, fmt)
    fmt = _Formatter(_summarized(a) if summarize else a, floating)
    return _str_with_formatter(a, indent, summarize, fmt)


def _add_suffixes(tensor_str, suffixes, indent):
    parts = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        if last_line_len + len(suffix) + 2 > PRINT_OPTS.linewidth:
            parts.append(",\n" + " " * indent + suffix)
            last_line_len = indent + len(suffix)
        else:
            parts.append(", " + suffix)
            last_line_len += len(suffix) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t):
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t.device.type != "cpu":
        suffixes.append(f"device='{t.device}'")
    dt = t.dtype
    default = dtypes.get_default_dtype()
    if t.numel() == 0:
        if t.dim() != 1:
            suffixes.append(f"size={tuple(t.shape)}")
        if dt is not default:  # no element shows whether an empty tensor holds integers
            suffixes.append(f"dtype={dt!r}")
        body = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append(f"size={tuple(t.shape)}")
        if dt not in (default, dtypes.int64, dtypes.bool_, dtypes.get_default_complex_dtype()):
            suffixes.append(f"dtype={dt!r}")
        body = _tensor_str(t._host("repr"), dt.is_floating_point, indent)
    grad_fn = t.grad_fn
    if grad_fn is not None:
        name = grad_fn.name() if hasattr(grad_fn, "name") else type(grad_fn).__name__
        suffixes.append(f"grad_fn=<{name.rsplit('::', 1)[-1]}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)


FUNCTIONS = ("set_printoptions", "get_printoptions", "printoptions")
