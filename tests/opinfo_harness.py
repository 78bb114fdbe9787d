"""torch's own OpInfo database (torch.testing._internal.common_methods_invocations.op_db) run against
tensorlab: each OpInfo's function, method, in-place and operator variants, on torch's sample inputs
converted with storage, sizes, strides and offset intact, compared with torch's results by
torch.testing.assert_close (torch's tolerances per dtype; NaN == NaN) or, where torch raises, by the
exception's kind. Used by tests/test_opinfo_db.py and runnable on its own:

    python tests/opinfo_harness.py [--full] [--device cuda] [--ops add,mul] [--json FILE]

prints the coverage figures (OpInfos whose function exists, samples agreeing) and the missing ops.
"""
from __future__ import annotations

import argparse
import json
import operator
import sys
import warnings

import numpy as np

import tensorlab as tl

# ops whose values are random or uninitialized: only shape and dtype are compared
NONDETERMINISTIC = ("rand", "normal", "bernoulli", "dropout", "multinomial", "uniform", "empty", "exponential",
                    "cauchy", "geometric", "log_normal", "poisson", "rrelu",
                    # pooling regions drawn from the generator where a sample gives no _random_samples: which
                    # samples agree depends on the generator's state, i.e. on what ran before (tests/
                    # test_nn_conv3d_pool3d.py compares them with explicit _random_samples)
                    "fractional_max_pool")
# names those words match that are deterministic all the same (normalize is no normal draw; the dropout
# backward is a product with a given mask)
DETERMINISTIC = ("normalize", "native_dropout_backward")


def _random(op):
    return any(w in op.name for w in NONDETERMINISTIC) and not any(w in op.name for w in DETERMINISTIC)


# torch's assert_close defaults are for one rounding (float32: rtol 1.3e-6); composites (attention,
# norms, products) round several times, so a few units in the last place more
TOLERANCES = {"float32": {"rtol": 1e-5, "atol": 1e-5}, "float64": {"rtol": 1e-7, "atol": 1e-7},
              "float16": {"rtol": 1e-3, "atol": 1e-3}, "bfloat16": {"rtol": 1.6e-2, "atol": 1e-2}}
# decompositions whose vectors are unique only up to sign: each column (last dim: V's rows for Vh)
# is flipped so its largest entry is positive before comparing
# ("phase": a general matrix's eigenvectors are unique only up to a unit complex factor per column, which
# LAPACK builds choose differently on the same input: both sides' columns are turned so that the entry
# where torch's column is largest is real and positive)
SIGN_FREE = {"svd": {0: "cols", 2: "cols"}, "linalg.svd": {0: "cols", 2: "rows"}, "linalg.eigh": {1: "cols"},
             "linalg.eig": {1: "phase"}}
ERROR_KINDS = (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError)
PASS, MISMATCH, OURS_RAISED, TORCH_RAISED, BOTH_RAISED, SKIPPED = (
    "pass", "mismatch", "tensorlab raised", "torch raised", "both raised", "skipped")


class Unsupported(Exception):
    """A sample tensorlab cannot take by construction (complex32, sparse layouts, generators)."""


def _torch():
    import torch
    return torch


def op_db():
    from torch.testing._internal.common_methods_invocations import op_db as db
    return db


def key(op):
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def public(op):
    return not op.name.startswith("_")


# -- torch -> tensorlab --------------------------------------------------------------------------------
def _tl_dtype(dt):
    name = str(dt).replace("torch.", "")
    d = getattr(tl, name, None)
    if not isinstance(d, tl.dtype if hasattr(tl, "dtype") and isinstance(tl.dtype, type) else tl.DType):
        raise Unsupported(f"dtype {name}")
    return d


def _sparse_to_tl(x, device):
    """A torch sparse COO or CSR (2-D, no batch) tensor as tensorlab's, requires_grad kept on the values."""
    torch = _torch()
    req = x.requires_grad
    x = x.detach()
    if x.layout == torch.sparse_coo:
        t = tl.sparse_coo_tensor(to_tl(x._indices(), device), to_tl(x._values(), device), tuple(x.shape),
                                 is_coalesced=x.is_coalesced())
    else:
        if x.crow_indices().dim() != 1:
            raise Unsupported("batched CSR tensor")
        t = tl.sparse_csr_tensor(to_tl(x.crow_indices(), device), to_tl(x.col_indices(), device),
                                 to_tl(x.values(), device), tuple(x.shape))
    return t.requires_grad_() if req else t


def to_tl(x, device):
    """torch values -> tensorlab values: tensors with their storage, sizes, strides and offset."""
    torch = _torch()
    if isinstance(x, torch.Tensor):
        if x.layout in (torch.sparse_coo, torch.sparse_csr) and x.dim() <= 2 + (x.layout == torch.sparse_coo) * 62 \
                and not x.is_quantized and (x.layout == torch.sparse_coo or x.dense_dim() == 0):
            return _sparse_to_tl(x, device)
        if x.layout != torch.strided or x.is_quantized:
            raise Unsupported(f"{x.layout} {x.dtype} tensor")
        if x.is_conj() or x.is_neg():  # torch's lazy bits: tensorlab's conj is eager (the values, materialized)
            req = x.requires_grad
            x = x.detach().resolve_conj().resolve_neg()
            if req:
                x.requires_grad_(True)
        # complex tensors travel as their storage's bytes, like every other dtype (complex64/complex128)
        dt = _tl_dtype(x.dtype)
        st = x.detach().untyped_storage()
        raw = torch.empty(0, dtype=torch.uint8).set_(st, 0, (st.nbytes(),), (1,)).numpy().copy()
        if raw.size % dt.itemsize:
            raise Unsupported("storage not a whole number of elements")
        base = tl.tensor(raw, device=device).view(dt)
        t = base.as_strided(tuple(x.shape), tuple(x.stride()), x.storage_offset())
        if x.requires_grad:
            t = t.detach().requires_grad_(True)
        return t
    if isinstance(x, torch.dtype):
        return _tl_dtype(x)
    if isinstance(x, torch.device):
        return str(x)
    if isinstance(x, torch.Size):
        return tuple(x)
    if isinstance(x, torch.memory_format):
        return getattr(tl, str(x).replace("torch.", ""))
    if isinstance(x, torch.layout):
        if x != torch.strided:
            raise Unsupported(f"layout {x}")
        return getattr(tl, "strided", x)
    if isinstance(x, torch.Generator):
        raise Unsupported(type(x).__name__)
    if isinstance(x, list):
        return [to_tl(v, device) for v in x]
    if isinstance(x, tuple):
        return tuple(to_tl(v, device) for v in x)
    if isinstance(x, dict):
        return {k: to_tl(v, device) for k, v in x.items()}
    if callable(x) and not isinstance(x, type):
        raise Unsupported("a callable argument")
    return x


# -- the variants ---------------------------------------------------------------------------------------
def _resolve_path(root, dotted):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _TorchAsTensorlab:
    """What `torch` means inside an OpInfo's lambda when it runs on tensorlab: tensorlab's names."""

    def __getattr__(self, name):
        return getattr(tl, name)


def _retarget(fn):
    """An OpInfo's lambda (`lambda x: x.T`, `lambda ts, eq: torch.einsum(eq, ts)`) with `torch`
    bound to tensorlab, or None when fn is not Python code."""
    import types
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    glb = dict(fn.__globals__, torch=_TorchAsTensorlab())
    return types.FunctionType(code, glb, fn.__name__, fn.__defaults__, fn.__closure__)


def _our_name(op):
    """tensorlab's object of the op's name: tl.<name> or, for Tensor-only names (T, mT, item), the
    Tensor attribute; None where tensorlab has neither."""
    if op.name.startswith("_"):
        return None
    found = _resolve_path(tl, op.name)
    if found is None and "." not in op.name:
        found = getattr(tl.Tensor, op.name, None)
    inplace = getattr(op, "inplace_variant", None)
    if found is None and getattr(op, "method_variant", None) is None and inplace is not None:
        # in-place-only ops (cauchy: `lambda inp: wrapper_set_seed(torch.Tensor.cauchy_, inp)`, and no
        # torch.cauchy or Tensor.cauchy): the name the lambda calls is the in-place method's
        found = getattr(tl.Tensor, getattr(inplace, "__name__", ""), None)
    return found


def _dunder(name):
    return name.startswith("__") and name.endswith("__")


def _aten(fn):
    """tensorlab's counterpart of a torch.ops.aten operator (aten.slice.Tensor, aten._softmax_backward_data):
    tensorlab.compat.aten.<name>, or None."""
    from tensorlab.compat import aten
    return getattr(aten, getattr(fn, "__name__", "").split(".")[0], None)


def _torch_private(fn):
    """tl.<name> for one of torch's own functions with a private name (torch._chunk_cat,
    torch._unsafe_masked_index, torch.segment_reduce for _segment_reduce), or None."""
    name = getattr(fn, "__name__", "")
    if not name or getattr(_torch(), name, None) is not fn:
        return None
    return getattr(tl, name, None)


def variants(op):
    """{variant: (torch callable, tensorlab callable or None)} for the variants torch defines."""
    out = {}
    fn = op.op
    dunder = _dunder(op.name) and getattr(fn, "__name__", "<lambda>") != "<lambda>"
    if dunder:
        # a Tensor operator as the op (__rsub__, __getitem__): tl.Tensor's function of that name, called
        # unbound as torch's reference inputs call torch's (Tensor.__rsub__(2.0, t) is t's rsub of 2.0)
        out["function"] = (fn, getattr(tl.Tensor, op.name, None))
    elif type(fn).__name__ in ("OpOverload", "OpOverloadPacket"):  # torch.ops.aten.X
        out["function"] = (fn, _aten(fn) or (_resolve_path(tl, op.name) if not op.name.startswith("_") else None))
    elif type(fn).__name__ == "method_descriptor":  # a Tensor method as the op (cfloat, cdouble): tl.Tensor's
        name = fn.__name__
        out["function"] = (fn, (lambda *a, _n=name, **k: _method(a[0], _n)(*a[1:], **k))
                           if getattr(tl.Tensor, name, None) is not None else None)
    elif getattr(fn, "__name__", "<lambda>") != "<lambda>":
        out["function"] = (fn, _resolve_path(tl, op.name) if not op.name.startswith("_") else _torch_private(fn))
    else:  # a lambda around torch's names: the same code with torch -> tensorlab, where the name exists
        out["function"] = (fn, _retarget(fn) if _our_name(op) is not None else None)
    for v, attr in (("method", "method_variant"), ("inplace", "inplace_variant")):
        m = getattr(op, attr, None)
        if m is not None and getattr(m, "__name__", "<lambda>") != "<lambda>":
            name = m.__name__
            ours = getattr(tl.Tensor, name, None)
            out[v] = (m, (lambda *a, _n=name, **k: _method(a[0], _n)(*a[1:], **k)) if ours is not None else None)
    if dunder and "method" in out:
        out["method"] = (out["method"][0], out["function"][1])
    ov = getattr(op, "operator_variant", None)
    if ov is not None and ov in vars(operator).values():
        out["operator"] = (ov, ov)
    return out


def _method(self, name):
    """Tensor.<name> bound to self; a non-tensor self is torch's TypeError, as an unbound method's."""
    if not isinstance(self, tl.Tensor):
        raise TypeError(f"descriptor '{name}' for 'Tensor' objects doesn't apply to a '{type(self).__name__}' object")
    return getattr(self, name)


def exists(op):
    """Whether tensorlab has the op: its function variant, or (for Tensor-only ops) its method."""
    vs = variants(op)
    if "function" in vs:
        return vs["function"][1] is not None
    return any(ours is not None for _, ours in vs.values())


# -- comparison -------------------------------------------------------------------------------------------
def to_torch(x):
    torch = _torch()
    if isinstance(x, tl.Tensor):
        if x.is_sparse or x.is_sparse_csr:  # compared by value (compare() densifies torch's sparse result too)
            x = x.to_dense()
        x = x.detach().cpu()
        if x.dtype is tl.bfloat16:
            return torch.from_numpy(x.float().numpy().copy()).to(torch.bfloat16)
        # complex64/complex128 values: NumPy's complex arrays, which torch reads as they are
        return torch.from_numpy(np.array(x.numpy(), copy=True))
    if isinstance(x, tl.Size):
        return torch.Size(x)
    if isinstance(x, (list, tuple)) and not isinstance(x, tl.Size):
        return type(x)(to_torch(v) for v in x) if not hasattr(x, "_fields") else tuple(to_torch(v) for v in x)
    if isinstance(x, getattr(tl, "DType", ())) or type(x).__name__ == "DType":
        return getattr(torch, x.name)
    return x


def _sign_fixed(t, rows):
    """t with each column (rows=False) or row (rows=True) of its last two dims flipped so that its
    largest-magnitude entry is positive."""
    torch = _torch()
    if t.dim() < 2 or t.numel() == 0:
        return t
    ax = -1 if rows else -2
    idx = t.abs().argmax(dim=ax, keepdim=True)
    sign = torch.sign(torch.gather(t, ax, idx))
    sign[sign == 0] = 1
    return t * sign


def _phase_fixed(t, ref):
    """t's columns each times the unit factor that makes its entry where ref's column is largest in
    magnitude real and positive (ref's index for both sides: no ties decided differently)."""
    torch = _torch()
    if t.dim() < 2 or t.numel() == 0 or t.shape != ref.shape:
        return t
    idx = ref.abs().argmax(dim=-2, keepdim=True)
    p = torch.gather(t, -2, idx)
    mag = p.abs()
    return t * torch.where(mag == 0, torch.ones_like(p), mag / torch.where(mag == 0, torch.ones_like(p), p))


def _canonical(ts, sign_free, ref=None):
    """Sign-fixed vectors, only the first k (the count of values: output 1 for svd, 0 for eigh);
    "phase" outputs turned by _phase_fixed against ref's (torch's) output."""
    k = ts[1].shape[-1] if len(ts) == 3 else ts[0].shape[-1]
    out = list(ts)
    for i, how in sign_free.items():
        if how == "phase":
            if isinstance(out[i], _torch().Tensor) and ref is not None:
                out[i] = _phase_fixed(out[i], ref[i])
            continue
        t = out[i]
        if not isinstance(t, _torch().Tensor):
            continue
        t = t[..., :k] if how == "cols" else t[..., :k, :]
        out[i] = _sign_fixed(t, how == "rows")
    return tuple(out)


def _flat(x):
    """A nested tuple/list of results as one flat tuple (histogramdd's (hist, (edges, ...)))."""
    if not isinstance(x, (list, tuple)):
        return (x,)
    return tuple(v for item in x for v in _flat(item))


def compare(got, want, values=True, sign_free=()):
    """None if tensorlab's result matches torch's, else the first line of the difference."""
    torch = _torch()
    g = to_torch(got)
    if isinstance(want, torch.Tensor) and want.layout != torch.strided:
        want = want.to_dense()
    if isinstance(want, tuple) and hasattr(want, "_fields"):
        want = tuple(want)
    if isinstance(want, tuple) and any(isinstance(w, (list, tuple)) for w in want):  # (hist, (edges, ...))
        want, g = _flat(want), _flat(g)
    if sign_free and isinstance(want, tuple) and isinstance(g, tuple) and len(g) == len(want):
        g, want = _canonical(g, sign_free, want), _canonical(want, sign_free, want)
    if isinstance(want, torch.Tensor) or (isinstance(want, (list, tuple)) and want and
                                          all(isinstance(w, torch.Tensor) for w in want)):
        ws = [want] if isinstance(want, torch.Tensor) else list(want)
        gs = [g] if not isinstance(g, (list, tuple)) else list(g)
        if len(gs) != len(ws):
            return f"{len(gs)} outputs, torch has {len(ws)}"
        for i, (a, b) in enumerate(zip(gs, ws)):
            if not isinstance(a, torch.Tensor):
                return f"output {i} is {type(a).__name__}, torch's a tensor"
            if a.dtype != b.dtype:
                return f"output {i} dtype {a.dtype} vs {b.dtype}"
            if tuple(a.shape) != tuple(b.shape):
                return f"output {i} shape {tuple(a.shape)} vs {tuple(b.shape)}"
            if values:
                tol = TOLERANCES.get(str(b.dtype).replace("torch.", ""), {})
                try:
                    torch.testing.assert_close(a, b.detach().cpu(), equal_nan=True, check_stride=False, **tol)
                except AssertionError as e:
                    return f"output {i} values: " + " ".join(str(e).split("\n")[:3])[:300]
        return None
    if isinstance(want, (bool, int, float)):
        if not isinstance(g, (bool, int, float)) and not (isinstance(g, torch.Tensor) and g.dim() == 0):
            return f"{type(g).__name__} vs {type(want).__name__}"
        gv = g.item() if isinstance(g, torch.Tensor) else g
        ok = gv == want or (isinstance(want, float) and np.isclose(gv, want, equal_nan=True))
        return None if ok else f"{gv!r} vs {want!r}"
    if g != want:
        return f"{str(g)[:100]} vs {str(want)[:100]}"
    return None


def _outcome(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return fn(), None
        except Exception as e:  # noqa: BLE001 (the exception is the outcome)
            return None, e


def _settled(result, device):
    """result, after the device finished: on CUDA a bad index is found on the device and raised at
    the next host wait (backends/cuda/device_checks.py), which this is for the sample's op."""
    if device != "cpu":
        tl.cuda.synchronize()
    return result


def _error_kind(e):
    for k in (IndexError, TypeError, ValueError, NotImplementedError, RuntimeError):
        if isinstance(e, k):
            return k
    return type(e)


def run_sample(torch_fn, our_fn, sample, device, inplace, values, sign_free=(), random_in_training=False):
    """(status, detail) of one variant on one sample."""
    torch = _torch()
    if sample.kwargs.get("dropout_p", 0) or (sample.kwargs.get("training") and random_in_training):
        values = False  # a random dropout mask
    try:
        args = to_tl((sample.input, sample.args, sample.kwargs), device)
    except Unsupported as e:
        return SKIPPED, str(e)
    x, a, k = args
    tx = sample.input.clone() if inplace and isinstance(sample.input, torch.Tensor) else sample.input
    want, terr = _outcome(lambda: torch_fn(tx, *sample.args, **sample.kwargs))
    got, oerr = _outcome(lambda: _settled(our_fn(x, *a, **k), device))
    if terr is not None and oerr is not None:
        return (BOTH_RAISED, None) if _error_kind(terr) is _error_kind(oerr) else (
            MISMATCH, f"tensorlab raised {type(oerr).__name__}, torch {type(terr).__name__}: {terr}"[:300])
    if oerr is not None:
        return OURS_RAISED, f"{type(oerr).__name__}: {oerr}"[:300]
    if terr is not None:
        return TORCH_RAISED, f"torch raised {type(terr).__name__}: {terr}"[:300]
    diff = compare(got, want, values, sign_free)
    if diff is None and inplace:
        diff = compare(x, tx, values)
        diff = None if diff is None else "the in-place input: " + diff
    return (PASS, None) if diff is None else (MISMATCH, diff)


def _leaves(x, out):
    """The tensors that require grad in a (nested) sample, in a fixed order."""
    torch = _torch()
    if isinstance(x, (torch.Tensor, tl.Tensor)):
        if x.requires_grad:
            out.append(x)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _leaves(v, out)
    elif isinstance(x, dict):
        for k in sorted(x):
            _leaves(x[k], out)
    return out


def _outputs(r):
    torch = _torch()
    if isinstance(r, (torch.Tensor, tl.Tensor)):
        return [r]
    if isinstance(r, (list, tuple)):
        return [t for v in r for t in _outputs(v)]
    return []


def run_grad_sample(torch_fn, our_fn, sample, device, index):
    """(status, detail): the float64 gradient of sum_i <out_i, w_i> with respect to every input that
    requires grad, tensorlab's against torch's (w_i fixed, drawn from the sample's index)."""
    torch = _torch()
    try:
        ours_args = to_tl((sample.input, sample.args, sample.kwargs), device)
    except Unsupported as e:
        return SKIPPED, str(e)
    t_leaves = _leaves((sample.input, sample.args, sample.kwargs), [])
    o_leaves = _leaves(ours_args, [])
    if not t_leaves or len(t_leaves) != len(o_leaves):
        return SKIPPED, "no input requires grad"
    # the sample's own post-processing for gradient tests (svd's vectors made sign-invariant, ...)
    post = getattr(sample, "output_process_fn_grad", None) or (lambda r: r)
    ours_post = _retarget(post) or post
    want, terr = _outcome(lambda: post(torch_fn(sample.input, *sample.args, **sample.kwargs)))
    got, oerr = _outcome(lambda: ours_post(our_fn(ours_args[0], *ours_args[1], **ours_args[2])))
    if terr is not None or oerr is not None:
        return SKIPPED, "the forward raised"
    t_all, o_all = _outputs(want), _outputs(got)
    if len(t_all) != len(o_all):
        return MISMATCH, f"{len(o_all)} outputs, torch has {len(t_all)}"
    # outputs paired by position; one of ours that does not require grad counts as a zero gradient
    pairs = [(t, o) for t, o in zip(t_all, o_all) if t.requires_grad and t.dtype.is_floating_point]
    if not pairs:
        return SKIPPED, "no differentiable output"
    rng = np.random.default_rng(index)
    ws = [rng.standard_normal(tuple(t.shape)) for t, _ in pairs]
    tg, terr = _outcome(lambda: torch.autograd.grad(
        sum((t * torch.tensor(w, dtype=t.dtype)).sum() for (t, _), w in zip(pairs, ws)), t_leaves, allow_unused=True))
    if terr is not None:
        return SKIPPED, f"torch's backward raised {type(terr).__name__}"
    o_terms = [(o * tl.tensor(w, dtype=o.dtype, device=device)).sum() for (_, o), w in zip(pairs, ws)
               if isinstance(o, tl.Tensor) and o.requires_grad]
    if not o_terms:
        og = [None] * len(o_leaves)
    else:
        og, oerr = _outcome(lambda: tl.autograd.grad(sum(o_terms), o_leaves, allow_unused=True))
        if oerr is not None:
            return OURS_RAISED, f"backward: {type(oerr).__name__}: {oerr}"[:300]
    for i, (a, b) in enumerate(zip(og, tg)):
        if b is None and a is None:
            continue
        a = to_torch(a) if a is not None else torch.zeros_like(b)
        b = b if b is not None else torch.zeros_like(a)
        try:
            torch.testing.assert_close(a, b, equal_nan=True, check_stride=False, rtol=1e-6, atol=1e-6,
                                       check_dtype=False)
        except AssertionError as e:
            return MISMATCH, f"gradient {i}: " + " ".join(str(e).split("\n")[:3])[:300]
    return PASS, None


def run_grads(op, device="cpu", every=1):
    """[("grad", "float64", i, status, detail)] for an OpInfo that supports autograd."""
    torch = _torch()
    if not getattr(op, "supports_autograd", False) or torch.float64 not in op.supported_dtypes("cpu"):
        return []
    vs = variants(op)
    if "function" not in vs or vs["function"][1] is None:
        return []
    theirs, ours = vs["function"]
    # torch's own gradient tests call the op through its gradcheck_wrapper (triangular inputs made
    # triangular, ...): so do these, with the wrapper's torch names bound to tensorlab for ours
    wrap = op.gradcheck_wrapper
    ours_wrap = _retarget(wrap) or wrap
    theirs = (lambda f: lambda *a, **k: wrap(f, *a, **k))(theirs)
    ours = (lambda f: lambda *a, **k: ours_wrap(f, *a, **k))(ours)
    torch.manual_seed(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ss = list(op.sample_inputs("cpu", torch.float64, requires_grad=True))
    except Exception as e:  # noqa: BLE001
        return [("grad", "float64", -1, SKIPPED, f"sample_inputs failed: {e}"[:200])]
    if _random(op):
        return []
    out = []
    for i, s in enumerate(ss):
        if i % every:
            continue
        if s.kwargs.get("dropout_p", 0) or s.kwargs.get("training"):
            continue
        status, detail = run_grad_sample(theirs, ours, s, device, i)
        out.append(("grad", "float64", i, status, detail))
    return out


def samples(op, device_dtype, reference, seed=0):
    torch = _torch()
    torch.manual_seed(seed)
    gen = op.reference_inputs if reference else op.sample_inputs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(gen("cpu", device_dtype, requires_grad=False))


def run_op(op, dtypes, device="cpu", reference=False, max_samples=None, every=1):
    """[(variant, dtype name, sample index, status, detail)] for one OpInfo."""
    out = []
    vs = {v: p for v, p in variants(op).items() if p[1] is not None}
    values = not _random(op)
    for dt in dtypes:
        if dt not in op.supported_dtypes("cpu"):
            continue
        try:
            ss = samples(op, dt, reference)
        except Exception as e:  # noqa: BLE001 (torch's own sample generator failed here)
            out.append(("samples", str(dt).replace("torch.", ""), -1, SKIPPED, f"sample_inputs failed: {e}"[:200]))
            continue
        if max_samples is not None:
            ss = ss[:max_samples]
        for i, s in enumerate(ss):
            if i % every:
                continue
            for v, (theirs, ours) in vs.items():
                if v == "inplace" and getattr(s, "broadcasts_input", False):
                    continue  # torch's own tests skip these: the in-place result cannot take the broadcast shape
                status, detail = run_sample(theirs, ours, s, device, v == "inplace", values, SIGN_FREE.get(op.name, ()),
                                            "attention" in op.name)
                out.append((v, str(dt).replace("torch.", ""), i, status, detail))
    return out


def tally(results):
    """{"samples_run", "agree", "agree_pct", "counts"} over {key: rows}, each row ending (status, detail)
    (this harness's and tests/moduleinfo_harness.py's)."""
    counts = {}
    for rows in results.values():
        for *_, status, _ in rows:
            counts[status] = counts.get(status, 0) + 1
    ran = sum(n for s, n in counts.items() if s != SKIPPED)
    agree = counts.get(PASS, 0) + counts.get(BOTH_RAISED, 0)
    return {"samples_run": ran, "agree": agree, "agree_pct": 100.0 * agree / max(ran, 1), "counts": counts}


def merge_known(path, entries):
    """Merge {device|key|variant|dtype|i: "status: detail"} into the known-failures JSON file at path."""
    try:
        with open(path) as f:
            known = json.load(f)
    except FileNotFoundError:
        known = {}
    known.update(entries)
    with open(path, "w") as f:
        json.dump(dict(sorted(known.items())), f, indent=1)
        f.write("\n")


def summarize(ops, results):
    pub = [op for op in ops if public(op)]
    have = [op for op in pub if exists(op)]
    return {"opinfos": len(pub), "exist": len(have), **tally(results),
            "missing": sorted(key(op) for op in pub if not exists(op))}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--full", action="store_true", help="every dtype and the reference inputs too")
    p.add_argument("--device", default="cpu")
    p.add_argument("--ops", default=None, help="comma-separated OpInfo names")
    p.add_argument("--json", default=None)
    p.add_argument("--every", type=int, default=1, help="every n-th sample only (as the CUDA test's subset)")
    p.add_argument("--grad", action="store_true", help="float64 gradients against torch's too")
    p.add_argument("--complex", action="store_true", help="the complex64 samples only (complex128 too with --full)")
    p.add_argument("--grad-every", type=int, default=1, help="every n-th sample's gradient only")
    p.add_argument("--write-known", default=None,
                   help="merge this run's failures into the known-failures file given (device|op|variant|dtype|i)")
    args = p.parse_args(argv)
    torch = _torch()
    ops = [op for op in op_db() if args.ops is None or op.name in args.ops.split(",")]
    dtypes = ([torch.float32, torch.float64, torch.int64, torch.bool, torch.bfloat16, torch.float16, torch.complex64,
               torch.complex128] if args.full else [torch.float32])
    if args.complex:
        dtypes = [torch.complex64, torch.complex128] if args.full else [torch.complex64]
    results = {}
    for op in ops:
        if (public(op) or args.ops) and exists(op):  # private OpInfos (__rsub__, _chunk_cat) when named
            results[key(op)] = run_op(op, dtypes, args.device, reference=False, every=args.every)
            if args.grad:
                results[key(op)] += run_grads(op, args.device, args.grad_every)
            if args.full:
                results[key(op)] += [("ref:" + r[0],) + r[1:] for r in run_op(op, dtypes, args.device, reference=True)]
    s = summarize(ops, results)
    if args.write_known:
        merge_known(args.write_known, {f"{args.device}|{op_key}|{v}|{dt}|{i}": f"{status}: {detail}"
                                       for op_key, rows in results.items() for v, dt, i, status, detail in rows
                                       if status in (MISMATCH, OURS_RAISED, TORCH_RAISED)})
    print(f"OpInfos: {s['exist']} / {s['opinfos']} exist in tensorlab; samples agreeing: {s['agree']} / "
          f"{s['samples_run']} ({s['agree_pct']:.1f}%); {s['counts']}")
    print("missing:", " ".join(s["missing"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": s, "results": results}, f, indent=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
