"""Random bad (and good) arguments to creation, view and indexing calls, run on torch and on
tensorlab: tensorlab must raise the exception class torch raises (or succeed where torch does,
with the same shape, strides and values), and no NumPy exception or message may reach the user.

Derandomized (hypothesis derives the seed from the test), so a failure replays as printed; 100
examples per call family keep the file to a few seconds in CI (TL_PROP_EXAMPLES=1000 to dig).
The few places where tensorlab deliberately differs from torch are in DIVERGENCES and FRIENDLIER
below, each with the reason."""
from __future__ import annotations

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import tensorlab as tl
from device_waits import settle_all

SETTINGS = settings(derandomize=True, max_examples=int(os.environ.get("TL_PROP_EXAMPLES", 100)), deadline=None,
                    database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.filter_too_much])

# -- the rules ---------------------------------------------------------------------------------------

# Phrases only NumPy says: any of them in a tensorlab message means NumPy's error leaked.
NUMPY_ISMS = ("array is too big", "maximum allowed dimension", "maximum supported dimension", "read-only",
              "setting an array element", "inhomogeneous", "could not be broadcast", "ufunc", "numpy.core",
              "numpy._core", "negative dimensions are not allowed", "buffer is too small", "axis ",
              "object arrays", "python int too large", "cannot convert float nan",
              "integers to negative", "only integer scalar arrays", "invalid literal")
TORCH_CLASSES = (NotImplementedError, IndexError, TypeError, ValueError, OverflowError, RuntimeError)


def _torch_class(exc):
    """The builtin class torch's exception is (torch.OutOfMemoryError is a RuntimeError, ...)."""
    for cls in TORCH_CLASSES:
        if isinstance(exc, cls):
            return cls
    return type(exc)


def _outcome(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # noqa: BLE001 - the exception is what we compare
            return None, e


def _check_not_numpy(exc, what):
    assert not type(exc).__module__.startswith("numpy"), f"{what}: NumPy exception {type(exc)}: {exc}"
    assert not isinstance(exc, (RecursionError, MemoryError, AttributeError, KeyError, AssertionError,
                                ZeroDivisionError)), f"{what}: {type(exc).__name__}: {exc}"
    msg = str(exc).lower()
    if "from_numpy" not in msg and "non-writable numpy array" not in msg:
        for phrase in NUMPY_ISMS:
            assert phrase not in msg, f"{what}: NumPy's message leaked ({phrase!r}): {exc}"
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        assert "/numpy/" not in tb.tb_frame.f_code.co_filename.replace("\\", "/"), \
            f"{what}: raised inside NumPy: {exc}"


# (predicate on (what, torch's result, our exception), reason): tensorlab raises where torch succeeds.
DIVERGENCES = (
    (lambda what, t, e: isinstance(e, RuntimeError) and "at most 64 dimensions" in str(e),
     "tensorlab's CPU views are NumPy arrays, limited to 64 dimensions; torch allows more"),
    (lambda what, t, e: isinstance(e, ValueError) and "nests deeper than 64" in str(e),
     "the same 64-dimension limit for nested data"),
    (lambda what, t, e: isinstance(e, RuntimeError) and t is not None and any(n < 0 for n in t.shape),
     "torch's as_strided/expand accept a negative size beside a 0 (a tensor of size -1); tensorlab refuses"),
    (lambda what, t, e: isinstance(e, TypeError) and "complex" in str(e),
     "tensorlab has no complex dtypes"),
    (lambda what, t, e: isinstance(e, TypeError) and "can't convert np.ndarray of type numpy.uint" in str(e),
     "tensorlab has no uint16/uint32/uint64 dtypes"),
    (lambda what, t, e: isinstance(e, (ValueError, TypeError)) and "sequence of length" in str(e)
     and what.startswith("tensor(") and t is not None and t.numel() == 0,
     "torch.tensor([[], [1]]) is an empty (2, 0) tensor: with a 0 in the shape it inferred from the first "
     "elements it never checks the rest and drops the [1]; tensorlab refuses ragged data"),
)


# (predicate on (what, torch's exception), reason): tensorlab succeeds where torch raises.
FRIENDLIER = (
    (lambda what, e: what.startswith("tensor(np array") and "negative" in str(e),
     "tensor() copies a NumPy array anyway, so negative strides need no refusal (from_numpy still refuses)"),
)


def _allowed_divergence(what, theirs, exc):
    return any(pred(what, theirs, exc) for pred, _ in DIVERGENCES)


def _same_values(ours, theirs):
    if theirs.numel() == 0:  # (2**31, 0).tolist() is 2**31 empty lists: compare shapes only
        return True
    a, b = ours.tolist(), theirs.tolist()
    if a == b:
        return True
    fa, fb = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    return fa.shape == fb.shape and bool(np.all((fa == fb) | (np.isnan(fa) & np.isnan(fb))))


def _ours(fn, what):
    """Run tensorlab's call; no NumPy warning (RuntimeWarning: invalid value, All-NaN slice) may leak."""
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            out = fn()
            settle_all()  # an index checked on a CUDA device raises at the next wait
            result = out, None
        except Exception as e:  # noqa: BLE001
            result = None, e
            try:  # the op may have launched a device-side check before it raised: do not leave it pending
                settle_all()
            except (IndexError, RuntimeError):
                pass
    for w in seen:
        assert "/numpy/" not in w.filename.replace("\\", "/") and "encountered" not in str(w.message), \
            f"{what}: NumPy's warning leaked: {w.category.__name__}: {w.message} ({w.filename})"
    return result


def compare(what, ours_fn, theirs_fn, torch, *, values=True, strides=True):
    import os, sys
    if os.environ.get("TL_PROP_TRACE"):
        print("CASE", what, file=sys.__stderr__, flush=True)
    theirs, texc = _outcome(theirs_fn)
    ours, oexc = _ours(ours_fn, what)
    if oexc is not None:
        _check_not_numpy(oexc, what)
        if _allowed_divergence(what, theirs, oexc):
            return
    if texc is not None:
        if oexc is None and any(pred(what, texc) for pred, _ in FRIENDLIER):
            return
        assert oexc is not None, f"{what}: torch raised {type(texc).__name__}: {texc}; tensorlab returned {ours!r}"
        if "too many indices" in str(texc) and "invalid data type 'str'" in str(oexc):
            return  # both refuse a str index; torch counts the dims first (listed in the report to the lead)
        if "Overflow when unpacking long long" in str(texc) and "Overflow when unpacking long long" in str(oexc):
            return  # torch's own class for it depends on which of its argument parsers ran (TypeError or ValueError)
        assert _torch_class(oexc) is _torch_class(texc), \
            f"{what}: torch raised {type(texc).__name__}: {texc}; tensorlab {type(oexc).__name__}: {oexc}"
        return
    assert oexc is None, f"{what}: torch returned {theirs!r}; tensorlab raised {type(oexc).__name__}: {oexc}"
    if isinstance(theirs, torch.Tensor):
        assert isinstance(ours, tl.Tensor), f"{what}: {ours!r}"
        assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {ours.shape} vs {theirs.shape}"
        assert ours.dtype.name == str(theirs.dtype).split(".")[1], f"{what}: dtype {ours.dtype} vs {theirs.dtype}"
        if strides and theirs.numel():  # an empty or size-1 dim's stride is arbitrary (torch's own paths differ)
            mine = [st for n, st in zip(ours.shape, ours.stride()) if n != 1]
            its = [st for n, st in zip(theirs.shape, theirs.stride()) if n != 1]
            assert mine == its, f"{what}: strides {ours.stride()} vs {theirs.stride()}"
        if values == "close" and theirs.numel():
            assert np.allclose(np.asarray(ours.tolist(), dtype=np.float64),
                               np.asarray(theirs.tolist(), dtype=np.float64), rtol=1e-6, equal_nan=True), what
        elif values and theirs.numel() <= 10_000:
            assert _same_values(ours, theirs), f"{what}: values {ours.tolist()} vs {theirs.tolist()}"


# -- translating arguments for torch ---------------------------------------------------------------

def to_torch(x, torch):
    if isinstance(x, tl.Tensor):
        return torch.tensor(x.cpu().tolist(), dtype=getattr(torch, x.dtype.name)).reshape(tuple(x.shape))
    if isinstance(x, tl.dtypes.DType):
        return getattr(torch, x.name)
    if isinstance(x, dict):
        return {k: to_torch(v, torch) for k, v in x.items()}
    if isinstance(x, list):
        return [to_torch(v, torch) for v in x]
    if isinstance(x, tuple):
        return tuple(to_torch(v, torch) for v in x)
    if isinstance(x, slice):
        return slice(to_torch(x.start, torch), to_torch(x.stop, torch), to_torch(x.step, torch))
    return x


def on(device, x):
    return x.to(device) if isinstance(x, tl.Tensor) else x


# -- strategies ---------------------------------------------------------------------------------------

HUGE = (2 ** 31, 2 ** 62, 2 ** 63 - 1, 2 ** 63, 2 ** 64, -(2 ** 63), -(2 ** 63) - 1)
small_ints = st.integers(-3, 4)
int_args = st.one_of(small_ints, small_ints, st.sampled_from(HUGE))
scalar_tensor_ints = st.builds(lambda v: tl.tensor(v), st.integers(0, 4))
size_elem = st.one_of(small_ints, small_ints, small_ints, st.sampled_from(HUGE), scalar_tensor_ints,
                      st.sampled_from([1.0, 2.5, True, None, "2", float("nan")]))
sizes = st.lists(size_elem, max_size=4)
DTYPES = [None, tl.float32, tl.float64, tl.float16, tl.bfloat16, tl.int64, tl.int32, tl.int16, tl.int8, tl.uint8,
          tl.bool, float, int, bool, complex, np.float32, np.dtype("int64"), "float32", "int", str, 3]
dtypes = st.sampled_from(DTYPES)


def _plausible_bytes(size):
    """Sizes whose allocation is tiny or fails at once (overflow): never a real multi-GB allocation."""
    try:
        dims = [int(s) for s in size]
    except (TypeError, ValueError, OverflowError):
        return True
    if any(d < 0 for d in dims) or any(abs(d) >= 2 ** 63 for d in dims):
        return True
    n = math.prod(dims)
    return n <= 4096 or n >= 2 ** 62


def _torch_dtype_ok(dtype, torch):
    return to_torch(dtype, torch)


# -- creation -----------------------------------------------------------------------------------------

@SETTINGS
@given(fn=st.sampled_from(["zeros", "ones", "empty"]), size=sizes, dtype=dtypes, splat=st.booleans())
def test_sized_creation(device, torch, fn, size, dtype, splat):
    assume(_plausible_bytes(size))
    kw = {} if dtype is None else {"dtype": dtype}
    args = tuple(size) if splat else (list(size),)
    compare(f"{fn}({args}, {kw})", lambda: getattr(tl, fn)(*args, device=device, **kw),
            lambda: getattr(torch, fn)(*to_torch(args, torch), **to_torch(kw, torch)), torch, values=fn != "empty")


@SETTINGS
@given(size=sizes, value=st.sampled_from([0, 1.5, -2, True, 2 ** 63, float("inf"), float("nan"), "x", None]),
       dtype=dtypes)
def test_full(device, torch, size, value, dtype):
    assume(_plausible_bytes(size))
    kw = {} if dtype is None else {"dtype": dtype}
    compare(f"full({size}, {value!r}, {kw})", lambda: tl.full(size, value, device=device, **kw),
            lambda: torch.full(to_torch(size, torch), value, **to_torch(kw, torch)), torch)


@SETTINGS
@given(size=st.lists(st.one_of(small_ints, st.sampled_from(HUGE)), max_size=3),
       stride=st.lists(st.one_of(st.integers(-2, 3), st.sampled_from(HUGE)), max_size=3), dtype=dtypes)
def test_empty_strided(device, torch, size, stride, dtype):
    assume(_plausible_bytes(size))
    assume(all(abs(s) < 2 ** 40 for s in stride) or 0 in size or any(n < 0 for n in size) or len(size) != len(stride))
    kw = {} if dtype is None else {"dtype": dtype}
    compare(f"empty_strided({size}, {stride}, {kw})",
            lambda: tl.empty_strided(size, stride, device=device, **kw),
            lambda: torch.empty_strided(size, stride, **to_torch(kw, torch)), torch, values=False)


range_num = st.one_of(st.integers(-5, 8), st.sampled_from([0.5, -1.5, 2.25, 1e20, float("inf"), float("nan"), 2 ** 63,
                                                          -(2 ** 63) - 1]), scalar_tensor_ints)


@SETTINGS
@given(start=range_num, end=st.one_of(st.none(), range_num), step=st.one_of(st.none(), range_num), dtype=dtypes)
def test_arange(device, torch, start, end, step, dtype):
    args = (start,) if end is None else (start, end) if step is None else (start, end, step)
    for a in args:  # a range of a few billion elements is a real allocation: skip those, keep overflows
        assume(not isinstance(a, float) or not math.isfinite(a) or abs(a) < 1e6 or abs(a) > 1e18)
    kw = {} if dtype is None else {"dtype": dtype}
    compare(f"arange{args} {kw}", lambda: tl.arange(*args, device=device, **kw),
            lambda: torch.arange(*to_torch(args, torch), **to_torch(kw, torch)), torch)


@SETTINGS
@given(start=range_num, end=range_num, steps=st.one_of(st.integers(-2, 6), st.sampled_from([2.0, True, 2 ** 63, "3"])),
       dtype=dtypes)
def test_linspace(device, torch, start, end, steps, dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    assume(not any(isinstance(v, float) and not math.isfinite(v) for v in (start, end)))  # path-dependent values
    compare(f"linspace({start}, {end}, {steps!r}, {kw})", lambda: tl.linspace(start, end, steps, device=device, **kw),
            lambda: torch.linspace(to_torch(start, torch), to_torch(end, torch), steps, **to_torch(kw, torch)),
            torch, values="close" if dtype in (None, tl.float32, tl.float64, float) else False)  # last ulp differs


leaf = st.one_of(st.integers(-300, 300), st.sampled_from(HUGE + (10 ** 400,)), st.floats(allow_nan=True, width=64),
                 st.booleans(), st.sampled_from([None, "a", 1 + 2j, b"x"]))
nested = st.recursive(leaf, lambda kids: st.lists(kids, max_size=3) | st.tuples(kids, kids), max_leaves=8)
uniform = st.integers(1, 3).flatmap(lambda n: st.lists(st.lists(st.integers(-5, 5), min_size=n, max_size=n),
                                                       max_size=3))


@SETTINGS
@given(data=st.one_of(nested, uniform), dtype=dtypes)
def test_tensor_from_python_data(device, torch, data, dtype):
    kw = {} if dtype is None else {"dtype": dtype}
    flat = str(data)
    # a NaN/inf or negative float cast to an integer type is undefined in C: torch's value depends on the CPU
    values = not (dtype in (tl.int64, tl.int32, tl.int16, tl.int8, tl.uint8, int) and "." in flat + "e")
    compare(f"tensor({data!r}, {kw})", lambda: tl.tensor(data, device=device, **kw),
            lambda: torch.tensor(data, **to_torch(kw, torch)), torch, values=values)


def test_tensor_from_deep_data(device, torch):
    for depth in (63, 64, 65, 200, 2000):
        d = 1
        for _ in range(depth):
            d = [d]
        compare(f"tensor(nested {depth} deep)", lambda: tl.tensor(d, device=device), lambda: torch.tensor(d), torch)


NP_DTYPES = ["f4", "f8", "f2", "i8", "i4", "i2", "i1", "u1", "?", ">i4", ">f8", "<i4", "u2", "u4", "u8", "c8", "O",
             "U1", "M8[s]", "V4"]


@SETTINGS
@given(code=st.sampled_from(NP_DTYPES), shape=st.lists(st.integers(0, 3), max_size=3),
       how=st.sampled_from(["plain", "reversed", "readonly", "sliced"]), fn=st.sampled_from(["from_numpy", "tensor"]))
def test_from_numpy_arrays(device, torch, code, shape, how, fn):
    def make():
        if code[0] in "OUMV":
            a = np.zeros(shape, dtype=code)
        else:
            a = np.arange(math.prod(shape)).astype(code).reshape(shape)
        if how == "reversed" and a.ndim:
            a = a[::-1]
        elif how == "readonly":
            a.flags.writeable = False
        elif how == "sliced" and a.ndim:
            a = a[..., ::2]
        return a
    ours_fn = (lambda: tl.from_numpy(make())) if fn == "from_numpy" else (lambda: tl.tensor(make(), device=device))
    compare(f"{fn}(np array {code} {shape} {how})", ours_fn, lambda: getattr(torch, fn)(make()), torch,
            strides=fn == "from_numpy")


# -- views --------------------------------------------------------------------------------------------

BASES = {"3d": lambda: tl.arange(24.0).reshape(2, 3, 4), "0d": lambda: tl.tensor(5.0),
         "empty": lambda: tl.zeros(0, 3), "col": lambda: tl.arange(6.0).reshape(6, 1)}
view_arg = st.one_of(small_ints, small_ints, st.sampled_from(HUGE), scalar_tensor_ints,
                     st.sampled_from([1.0, True, None, "1"]))
VIEW_CALLS = {
    "view": lambda: st.lists(view_arg, max_size=4).map(lambda s: (tuple(s), {})),
    "reshape": lambda: st.lists(view_arg, max_size=4).map(lambda s: (tuple(s), {})),
    "expand": lambda: st.lists(view_arg, max_size=4).map(lambda s: (tuple(s), {})),
    "permute": lambda: st.lists(view_arg, max_size=4).map(lambda s: (tuple(s), {})),
    "as_strided": lambda: st.tuples(st.lists(st.one_of(small_ints, st.sampled_from(HUGE)), max_size=3),
                                    st.lists(st.one_of(st.integers(-1, 4), st.sampled_from(HUGE)), max_size=3),
                                    st.one_of(st.integers(-1, 30), st.sampled_from(HUGE))
                                    ).map(lambda t: ((list(t[0]), list(t[1]), t[2]), {})),
    "narrow": lambda: st.tuples(view_arg, view_arg, view_arg).map(lambda t: (t, {})),
    "select": lambda: st.tuples(view_arg, view_arg).map(lambda t: (t, {})),
    "transpose": lambda: st.tuples(view_arg, view_arg).map(lambda t: (t, {})),
    "unflatten": lambda: st.tuples(view_arg, st.lists(view_arg, max_size=3).map(tuple)).map(lambda t: (t, {})),
    "flatten": lambda: st.tuples(view_arg, view_arg).map(lambda t: (t, {})),
    "squeeze": lambda: st.tuples(view_arg).map(lambda t: (t, {})),
    "unsqueeze": lambda: st.tuples(view_arg).map(lambda t: (t, {})),
    "movedim": lambda: st.tuples(view_arg, view_arg).map(lambda t: (t, {})),
}


@SETTINGS
@given(base=st.sampled_from(sorted(BASES)),
       call=st.sampled_from(sorted(VIEW_CALLS)).flatmap(lambda n: VIEW_CALLS[n]().map(lambda a: (n, a))))
def test_views(device, torch, base, call):
    name, (args, kw) = call
    x = BASES[base]().to(device)
    tx = to_torch(BASES[base](), torch)
    compare(f"{base}.{name}{args!r}", lambda: getattr(x, name)(*args, **kw),
            lambda: getattr(tx, name)(*to_torch(args, torch), **kw), torch)


# -- indexing -----------------------------------------------------------------------------------------

index_leaf = st.one_of(
    st.integers(-5, 5), st.sampled_from(HUGE), st.sampled_from([None, Ellipsis, True, False, 1.0, "0"]),
    st.builds(slice, st.one_of(st.none(), st.integers(-5, 5), st.sampled_from(HUGE)),
              st.one_of(st.none(), st.integers(-5, 5)), st.one_of(st.none(), st.integers(-2, 3))),
    st.lists(st.integers(-4, 4), max_size=3),
    st.lists(st.integers(-4, 4), max_size=3).map(lambda v: tl.tensor(v, dtype=tl.int64)),
    st.lists(st.booleans(), min_size=1, max_size=4).map(lambda v: tl.tensor(v)),
    st.integers(-3, 3).map(lambda v: tl.tensor(v)),
    st.just(tl.tensor([1.0])))
indices = st.one_of(index_leaf, st.lists(index_leaf, max_size=4).map(tuple))


@SETTINGS
@given(base=st.sampled_from(["3d", "0d", "empty", "col"]), index=indices, write=st.booleans())
def test_indexing(device, torch, base, index, write):
    x = BASES[base]().to(device)
    tx = to_torch(BASES[base](), torch)
    idx = tuple(on(device, i) for i in index) if isinstance(index, tuple) else on(device, index)
    tidx = to_torch(index, torch)
    if write:
        def ours():
            x[idx] = -1.0
            return x

        def theirs():
            tx[tidx] = -1.0
            return tx
        compare(f"{base}[{index!r}] = -1", ours, theirs, torch)
    else:
        compare(f"{base}[{index!r}]", lambda: x[idx], lambda: tx[tidx], torch)
