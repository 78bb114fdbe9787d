"""torch.func: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap and functional_call,
built on tensorlab's reverse-mode autograd.

tensorlab has no batching transform and no forward-mode AD: `vmap` runs the function once per
batch element and stacks the results (same values as torch's vmap, one call per element, and the
function may read data-dependent values, which torch's vmap forbids); `jvp` and `jacfwd` use the
double-backward trick and reverse mode (same values as forward mode). The transforms compose
(grad(grad(f)), jacfwd(jacrev(f)), vmap(grad(f))) because each one differentiates with
create_graph and detaches only at the outermost level."""
from __future__ import annotations

import contextlib
import functools

from .autograd.grad_mode import enable_grad
from .tensor import Tensor
from .utils import _pytree

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call"]


# -- pytrees: torch.utils._pytree's (tuple, list, dict, namedtuple, ... of tensors and leaves) --------
_flatten = _pytree.tree_flatten
_unflatten = _pytree.tree_unflatten


def _check_argnums(argnums, nargs, fn):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError(f"{fn}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{fn}: argnums must be int or Tuple[int, ...], got: {type(n).__name__}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"{fn}: Got argnums={n}, but only {nargs} positional inputs")
    return tuple(n % nargs for n in nums)


def _prepare(x):
    """The differentiable stand-in for an input: an alias inside the outer graph when the input is
    already tracked (nested transforms), else a fresh leaf."""
    if not isinstance(x, Tensor):
        raise RuntimeError(f"Expected the differentiated inputs to be Tensors, got {type(x).__name__}")
    if x.requires_grad:
        return x.view_as(x)
    return x.detach().requires_grad_()


def _maybe_detach(tree, keep):
    if keep:
        return tree
    leaves, spec = _flatten(tree)
    return _unflatten([l.detach() if isinstance(l, Tensor) else l for l in leaves], spec)


def _any_tracked(leaves):
    return any(isinstance(l, Tensor) and l.requires_grad for l in leaves)


def _grads(outputs, inputs, grad_outputs=None):
    from .autograd.engine import grad as _agrad
    res = _agrad(outputs, inputs, grad_outputs, create_graph=True, allow_unused=True)
    from .ops.creation import zeros_like
    return [zeros_like(x) if g is None else g for x, g in zip(inputs, res)]


# -- grad, grad_and_value, vjp, jvp ----------------------------------------------------------------
def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient of func's scalar output w.r.t. args[argnums], output);
    with has_aux, func returns (output, aux) and the result is (grad, (output, aux))."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _check_argnums(argnums, len(args), "grad_and_value")
        args = list(args)
        leaves_per_arg, specs = [], []
        with enable_grad():
            outer = _any_tracked([l for n in nums for l in _flatten(args[n])[0]])
            for n in nums:
                leaves, spec = _flatten(args[n])
                leaves = [_prepare(l) for l in leaves]
                leaves_per_arg.append(leaves)
                specs.append(spec)
                args[n] = _unflatten(leaves, spec)
            out = func(*args, **kwargs)
            aux = None
            if has_aux:
                if not (isinstance(out, tuple) and len(out) == 2):
                    raise RuntimeError("grad_and_value(f)(*args): output of function f should be a tuple: "
                                       "(output, aux) if has_aux is True")
                out, aux = out
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(out).__name__}")
            if out.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs "
                                   "instead?")
            flat = [l for ls in leaves_per_arg for l in ls]
            gs = _grads([out], flat) if out.requires_grad else _grads_zero(flat)
        res, i = [], 0
        for ls, spec in zip(leaves_per_arg, specs):
            res.append(_unflatten(gs[i:i + len(ls)], spec))
            i += len(ls)
        g = tuple(res) if isinstance(argnums, tuple) else res[0]
        g, out = _maybe_detach(g, outer), _maybe_detach(out, outer)
        if has_aux:
            return g, (out, _maybe_detach(aux, outer))
        return g, out
    return wrapper


def _grads_zero(inputs):
    from .ops.creation import zeros_like
    return [zeros_like(x) for x in inputs]


def grad(func, argnums=0, has_aux=False):
    """torch.func.grad: a function computing the gradient of func's scalar output w.r.t.
    args[argnums] (an int or a tuple of ints); with has_aux, returns (grad, aux)."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def vjp(func, *primals, has_aux=False):
    """torch.func.vjp: (func(*primals), vjp_fn[, aux]); vjp_fn(cotangents) returns a tuple with the
    vector-Jacobian product for every primal (cotangents shaped as the output)."""
    with enable_grad():
        leaves, spec = _flatten(primals)
        outer = _any_tracked(leaves)
        ins = [_prepare(l) for l in leaves]
        out = func(*_unflatten(ins, spec))
        aux = None
        if has_aux:
            if not (isinstance(out, tuple) and len(out) == 2):
                raise RuntimeError("vjp(f, *primals): output of function f should be a tuple: (output, aux) if "
                                   "has_aux is True")
            out, aux = out
    out_leaves, out_spec = _flatten(out)

    def vjp_fn(*cotangents):
        ct = cotangents[0] if len(cotangents) == 1 else cotangents
        ct_leaves, _ = _flatten(ct)
        if len(ct_leaves) != len(out_leaves):
            raise RuntimeError(f"Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function: {len(ct_leaves)} cotangents for {len(out_leaves)} outputs")
        for o, c in zip(out_leaves, ct_leaves):
            if tuple(o.shape) != tuple(c.shape):
                raise RuntimeError(f"vjp: Expected cotangent shape {tuple(o.shape)} to match the output's, got "
                                   f"{tuple(c.shape)}")
        with enable_grad():
            pairs = [(o, c) for o, c in zip(out_leaves, ct_leaves) if o.requires_grad]
            if pairs:
                gs = _grads([p[0] for p in pairs], ins, [p[1] for p in pairs])
            else:
                gs = _grads_zero(ins)
        keep = outer or _any_tracked(ct_leaves)
        return _maybe_detach(tuple(_unflatten(gs, spec)), keep)

    result = _maybe_detach(_unflatten(out_leaves, out_spec), outer)
    if has_aux:
        return result, vjp_fn, _maybe_detach(aux, outer)
    return result, vjp_fn


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """torch.func.jvp: (func(*primals), the Jacobian-vector product along `tangents`), computed
    with the double-backward trick (two reverse passes) instead of forward-mode AD."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    if len(primals) != len(tangents):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure, got {len(primals)} primals and {len(tangents)} tangents")
    from .ops.creation import zeros_like
    with enable_grad():
        p_leaves, spec = _flatten(primals)
        t_leaves, _ = _flatten(tangents)
        outer = _any_tracked(p_leaves) or _any_tracked(t_leaves)
        ins = [_prepare(l) for l in p_leaves]
        out = func(*_unflatten(ins, spec))
        aux = None
        if has_aux:
            out, aux = out
        out_leaves, out_spec = _flatten(out)
        dummies = [zeros_like(o).requires_grad_() for o in out_leaves]
        tracked = [(o, d) for o, d in zip(out_leaves, dummies) if o.requires_grad]
        if tracked:
            g = _grads([o for o, _ in tracked], ins, [d for _, d in tracked])
            jv = _grads(g, [d for _, d in tracked], t_leaves)
            it = iter(jv)
            jv = [next(it) if o.requires_grad else zeros_like(o) for o in out_leaves]
        else:
            jv = [zeros_like(o) for o in out_leaves]
    res = (_maybe_detach(_unflatten(out_leaves, out_spec), outer), _maybe_detach(_unflatten(jv, out_spec), outer))
    return res + (_maybe_detach(aux, outer),) if has_aux else res


# -- Jacobians ---------------------------------------------------------------------------------------
def _jacobian(func, argnums, has_aux, name):
    @functools.wraps(func)
    def wrapper(*args):
        from .ops.shape import stack
        nums = _check_argnums(argnums, len(args), name)
        args = list(args)
        with enable_grad():
            in_leaves = [_flatten(args[n])[0] for n in nums]
            outer = _any_tracked([l for ls in in_leaves for l in ls])
            prepared, specs = [], []
            for n in nums:
                leaves, spec = _flatten(args[n])
                leaves = [_prepare(l) for l in leaves]
                prepared.append(leaves)
                specs.append(spec)
                args[n] = _unflatten(leaves, spec)
            out = func(*args)
            aux = None
            if has_aux:
                out, aux = out
            out_leaves, out_spec = _flatten(out)
            flat_in = [l for ls in prepared for l in ls]
            blocks = []  # blocks[i][j]: d out_i / d in_j
            for o in out_leaves:
                rows = [[] for _ in flat_in]
                of = o.reshape(-1)
                for k in range(o.numel()):
                    gs = _grads([of[k]], flat_in) if o.requires_grad else _grads_zero(flat_in)
                    for r, g in zip(rows, gs):
                        r.append(g)
                row_blocks = []
                for r, x in zip(rows, flat_in):
                    if r:
                        row_blocks.append(stack(r, 0).reshape(tuple(o.shape) + tuple(x.shape)))
                    else:
                        from .ops.creation import zeros
                        row_blocks.append(zeros(tuple(o.shape) + tuple(x.shape), dtype=x.dtype, device=x.device))
                blocks.append(row_blocks)
        per_out = []
        for row_blocks in blocks:
            res, i = [], 0
            for ls, spec in zip(prepared, specs):
                res.append(_unflatten(row_blocks[i:i + len(ls)], spec))
                i += len(ls)
            per_out.append(tuple(res) if isinstance(argnums, tuple) else res[0])
        jac = _maybe_detach(_unflatten(per_out, out_spec), outer)
        return (jac, _maybe_detach(aux, outer)) if has_aux else jac
    return wrapper


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None, _preallocate_and_copy=False):
    """torch.func.jacrev: the Jacobian of func w.r.t. args[argnums], one reverse pass per output
    element (chunk_size accepted; the rows are always computed one by one)."""
    if chunk_size is not None and not (isinstance(chunk_size, int) and chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """torch.func.jacfwd: the Jacobian of func w.r.t. args[argnums]. Computed by reverse mode (the
    same values as torch's forward mode)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")
    return _jacobian(func, argnums, has_aux, "jacfwd")


def hessian(func, argnums=0):
    """torch.func.hessian: jacfwd(jacrev(func, argnums), argnums)."""
    return jacfwd(jacrev(func, argnums), argnums)


# -- vmap ----------------------------------------------------------------------------------------------
def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.func.vmap, as a loop: the function runs once per batch element (inputs sliced along
    in_dims; None = not batched) and the outputs are stacked along out_dims. The values are
    torch's; unlike torch's vmap the function sees ordinary tensors, so data-dependent control flow
    and .item() work, and the cost is one call per element."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        from .ops.shape import stack
        dims = in_dims if isinstance(in_dims, tuple) else (in_dims,) * len(args)
        if not isinstance(in_dims, (int, tuple)) and in_dims is not None:
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): expected `in_dims` to be int or a "
                             f"(potentially nested) tuple matching the structure of inputs, got: {type(in_dims)}.")
        if len(dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                             f"structure of `inputs`. in_dims has structure {len(dims)} but inputs has "
                             f"{len(args)} elements.")
        leaves, arg_dims = [], []
        for a, d in zip(args, dims):
            ls, _ = _flatten(a)
            ds = _flatten(d)[0] if isinstance(d, (tuple, list, dict)) else [d] * len(ls)
            leaves.append(ls)
            arg_dims.append(ds)
        size = None
        for ls, ds in zip(leaves, arg_dims):
            for l, d in zip(ls, ds):
                if d is None:
                    continue
                if not isinstance(l, Tensor):
                    raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for an input but "
                                     f"the input is of type {type(l)}. We cannot vmap over non-Tensor arguments, "
                                     "please use None as the respective in_dim")
                if not -l.dim() <= d < max(l.dim(), 1) or l.dim() == 0:
                    raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): Got in_dim={d} for some input, "
                                     f"but that input is a Tensor of dimensionality {l.dim()} so expected in_dim to "
                                     f"satisfy -{l.dim()} <= in_dim < {l.dim()}.")
                n = l.shape[d]
                if size is not None and n != size:
                    raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, "
                                     f"got sizes {size} and {n} for the mapped dimension")
                size = n
        if size is None:
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): at least one input must be batched "
                             "(in_dims all None)")
        outs = []
        for b in range(size):
            call = []
            for a, ls, ds in zip(args, leaves, arg_dims):
                sliced = [l.select(d, b) if d is not None else l for l, d in zip(ls, ds)]
                call.append(_unflatten(sliced, _flatten(a)[1]))
            outs.append(func(*call, **kwargs))
        out_leaves = [_flatten(o)[0] for o in outs]
        spec = _flatten(outs[0])[1]
        n_out = len(out_leaves[0])
        od = _flatten(out_dims)[0] if isinstance(out_dims, (tuple, list)) else [out_dims] * n_out
        if len(od) != n_out:
            raise ValueError(f"vmap(f, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                             f"structure of `outputs`: {len(od)} out_dims for {n_out} outputs")
        stacked = []
        for i in range(n_out):
            col = [ol[i] for ol in out_leaves]
            if not isinstance(col[0], Tensor):
                raise ValueError(f"vmap: `{func.__name__}` must only return Tensors, got type {type(col[0])}")
            if od[i] is None:
                stacked.append(col[0])
                continue
            d = od[i] if od[i] >= 0 else od[i] + col[0].dim() + 1
            stacked.append(stack(col, d))
        return _unflatten(stacked, spec)
    return wrapper


# -- functional_call -----------------------------------------------------------------------------------
def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """Call `module` with its parameters and buffers replaced by the tensors of the given dict(s)
    (names as named_parameters()/named_buffers() give them); the module is restored afterwards. A
    parametrized tensor's own name (e.g. "weight" under nn.utils.parametrize) replaces the whole
    parametrization; "parametrizations.weight.original" replaces its input."""
    if isinstance(parameter_and_buffer_dicts, dict):
        mapping = dict(parameter_and_buffer_dicts)
    else:
        mapping = {}
        for d in parameter_and_buffer_dicts:
            dup = set(d) & set(mapping)
            if dup:
                raise ValueError(f"{sorted(dup)} appeared in multiple dictionaries; behavior of functional call is "
                                 "ambiguous")
            mapping.update(d)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, mapping, tie_weights, strict):
        return module(*args, **(kwargs or {}))


@contextlib.contextmanager
def _swapped(module, mapping, tie_weights, strict):
    """Within: the named members of `module` read as mapping's tensors (restored on exit)."""
    mapping = dict(mapping)
    if tie_weights:
        # names of one tied tensor all take the value given for any of them
        by_id = {}
        for name, t in list(module.named_parameters(remove_duplicate=False)) + \
                list(module.named_buffers(remove_duplicate=False)):
            by_id.setdefault(id(t), []).append(name)
        for names in by_id.values():
            given = [n for n in names if n in mapping]
            if given:
                for n in names:
                    mapping.setdefault(n, mapping[given[0]])
    if strict:
        expected = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
                   {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(expected - set(mapping)), sorted(set(mapping) - expected)
        if missing or unexpected:
            raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\tUnexpected key(s): "
                               f"{unexpected}.\n\tMissing key(s): {missing}.")
    from .nn.utils.parametrize import is_parametrized
    saved = []
    try:
        for name, value in mapping.items():
            *path, leaf = name.split(".")
            owner = module
            for p in path:
                owner = getattr(owner, p)
            if is_parametrized(owner, leaf):  # the class property reads this table first
                tbl = owner.__dict__.setdefault("_tl_functional_overrides", {})
                saved.append((tbl, leaf, tbl.get(leaf, _ABSENT)))
                tbl[leaf] = value
                continue
            for table in ("_parameters", "_buffers"):
                tbl = owner.__dict__[table]
                if leaf in tbl:
                    saved.append((tbl, leaf, tbl[leaf]))
                    tbl[leaf] = value
                    break
            else:
                saved.append((owner.__dict__, leaf, owner.__dict__.get(leaf, _ABSENT)))
                owner.__dict__[leaf] = value
        yield
    finally:
        for tbl, key, old in reversed(saved):
            if old is _ABSENT:
                del tbl[key]
            else:
                tbl[key] = old


_ABSENT = object()
