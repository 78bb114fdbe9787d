"""torch.autograd.functional over tensorlab's reverse-mode engine: vjp, jvp, jacobian, hessian, vhp and hvp,
with torch's argument names, result structure (a tensor where the function took or returned one tensor, tuples
where it took or returned tuples) and strict-mode errors.

How: every product is one or more calls of autograd.grad on a graph built from detached copies of the inputs
(views of them with create_graph=True, so the result stays differentiable with respect to the caller's
tensors). jvp uses the double-backward identity: J v = d/du <grad(f, x; u), v> for a dummy cotangent u.
A Jacobian is built one output element at a time (vectorize=True and strategy="forward-mode" give the same
values by the same loop: tensorlab has no batched or forward-mode engine yet); hvp is vhp, which equals it for
the twice-differentiable functions the Hessian is defined for."""
from __future__ import annotations

from ..tensor import Tensor

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _tl():
    import tensorlab as tl
    return tl


def _tuple(x, what, fn):
    """(was it a tuple, the values as a tuple of tensors); TypeError for anything else."""
    if isinstance(x, Tensor):
        return False, (x,)
    if isinstance(x, (tuple, list)) and all(isinstance(t, Tensor) for t in x):
        return True, tuple(x)
    raise TypeError(f"The {what} given to {fn} must be either a Tensor or a tuple of Tensors but the value "
                    f"given is of type {type(x).__name__}.")


def _untuple(values, was_tuple):
    return tuple(values) if was_tuple else values[0]


def _prepare(inputs, create_graph):
    """Graph leaves for the inputs: views that keep the caller's graph (create_graph), else detached copies."""
    out = []
    for t in inputs:
        if create_graph and t.requires_grad:
            out.append(t.view_as(t))
        else:
            out.append(t.detach().requires_grad_(True))
    return tuple(out)


def _finish(values, create_graph):
    return tuple(v if v is None or create_graph else v.detach() for v in values)


def _check_outputs(outputs, strict, fn):
    if strict:
        for i, o in enumerate(outputs):
            if not o.requires_grad:
                raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                                   "outputs must be computed in a differentiable manner from the input when running "
                                   f"in strict mode ({fn}).")


def _grads(outputs, inputs, grad_outputs, create_graph):
    """autograd.grad of the outputs that require grad (others contribute nothing): one entry per input, None
    where an input does not reach any of them."""
    tl = _tl()
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    return tuple(tl.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], retain_graph=True,
                                  create_graph=create_graph, allow_unused=True))


def _fill(grads, like, strict, message):
    out = []
    for j, (g, x) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(message.format(j=j))
            g = _tl().zeros_like(x)
        out.append(g)
    return tuple(out)


def _vectors(v, like, fn, what):
    """The caller's vectors (v=None only where every `like` tensor has one element: ones), checked shape by shape."""
    if v is None:
        if any(t.numel() != 1 for t in like):
            raise RuntimeError(f"The vector v can only be None if the {what} of the user-provided function is a "
                               f"single Tensor with a single element ({fn}).")
        return tuple(_tl().ones_like(t) for t in like)
    _, vs = _tuple(v, "v", fn)
    if len(vs) != len(like):
        raise RuntimeError(f"{fn}: v has {len(vs)} tensors but the {what} has {len(like)}")
    for i, (a, b) in enumerate(zip(vs, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Mismatch in shape: v[{i}] has shape {tuple(a.shape)} and the {what}[{i}] has shape "
                               f"{tuple(b.shape)} ({fn}).")
    return tuple(t.detach() for t in vs)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product, one reverse pass."""
    tl = _tl()
    with tl.enable_grad():
        in_tuple, xs = _tuple(inputs, "inputs", "vjp")
        xs = _prepare(xs, create_graph)
        out_tuple, ys = _tuple(func(*xs), "outputs of the user-provided function", "vjp")
        _check_outputs(ys, strict, "vjp")
        vs = _vectors(v, ys, "vjp", "output")
        g = _grads(ys, xs, vs, create_graph)
    g = _fill(g, xs, strict, "The output of the user-provided function is independent of input {j}. This is not "
                             "allowed in strict mode.")
    return _untuple(_finish(ys, create_graph), out_tuple), _untuple(_finish(g, create_graph), in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by differentiating a vector-Jacobian product with respect
    to its (dummy) cotangent."""
    tl = _tl()
    with tl.enable_grad():
        in_tuple, xs = _tuple(inputs, "inputs", "jvp")
        xs = _prepare(xs, create_graph)
        vs = _vectors(v, xs, "jvp", "input")
        out_tuple, ys = _tuple(func(*xs), "outputs of the user-provided function", "jvp")
        _check_outputs(ys, strict, "jvp")
        us = tuple(tl.zeros_like(y).requires_grad_(True) for y in ys)
        g = _grads(ys, xs, us, True)
        pairs = [(gi, vi) for gi, vi in zip(g, vs) if gi is not None and gi.requires_grad]
        if pairs:
            jv = tl.autograd.grad([a for a, _ in pairs], us, [b for _, b in pairs], create_graph=create_graph,
                                  allow_unused=True)
        else:
            jv = (None,) * len(us)
    jv = _fill(jv, ys, strict, "The output {j} of the user-provided function is independent of the inputs. This is "
                               "not allowed in strict mode.")
    return _untuple(_finish(ys, create_graph), out_tuple), _untuple(_finish(jv, create_graph), out_tuple)


def _jacobian_rows(ys, xs, create_graph, strict):
    """rows[i][j]: d ys[i] / d xs[j], shape ys[i].shape + xs[j].shape, one reverse pass per output element."""
    tl = _tl()
    rows = []
    for i, y in enumerate(ys):
        flat = y.reshape(-1)
        cols = [[] for _ in xs]
        for k in range(flat.numel()):
            if y.requires_grad:
                g = tl.autograd.grad(flat[k], xs, retain_graph=True, create_graph=create_graph, allow_unused=True)
            else:
                g = (None,) * len(xs)
            for j, (gj, x) in enumerate(zip(g, xs)):
                if gj is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                           "This is not allowed in strict mode.")
                    gj = tl.zeros_like(x)
                cols[j].append(gj)
        row = []
        for j, x in enumerate(xs):
            if cols[j]:
                block = tl.stack(cols[j]).reshape(tuple(y.shape) + tuple(x.shape))
            else:
                block = tl.zeros(tuple(y.shape) + tuple(x.shape), dtype=x.dtype, device=x.device)
            row.append(block if create_graph else block.detach())
        rows.append(tuple(row))
    return rows


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: a tensor of shape output.shape + input.shape for one input and one output,
    a tuple over inputs, over outputs, or a tuple of tuples (outputs, then inputs) as torch returns them.
    vectorize and strategy ("reverse-mode" or "forward-mode") are accepted and give the same values (see the
    module docstring)."""
    tl = _tl()
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your function '
                         'has more outputs than inputs, "forward-mode" tends to be more performant. Otherwise, '
                         'prefer to use "reverse-mode".')
    with tl.enable_grad():
        in_tuple, xs = _tuple(inputs, "inputs", "jacobian")
        xs = _prepare(xs, create_graph)
        out_tuple, ys = _tuple(func(*xs), "outputs of the user-provided function", "jacobian")
        _check_outputs(ys, strict, "jacobian")
        rows = _jacobian_rows(ys, xs, create_graph, strict)
    if out_tuple:
        return tuple(_untuple(r, in_tuple) for r in rows)
    return _untuple(rows[0], in_tuple)


def _scalar_output(func, xs, fn):
    out = func(*xs)
    was_tuple, ys = _tuple(out, "outputs of the user-provided function", fn)
    if was_tuple or len(ys) != 1:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if ys[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
    return ys[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one single-element tensor: a tensor of shape input.shape * 2 for one
    input, a tuple of tuples (input i, input j) for several."""
    tl = _tl()
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    in_tuple, xs = _tuple(inputs, "inputs", "hessian")

    def gradient(*args):
        y = _scalar_output(func, args, "hessian")
        if strict and not y.requires_grad:
            raise RuntimeError("The function given to hessian does not require gradients (strict mode).")
        g = tl.autograd.grad(y, args, create_graph=True, allow_unused=True) if y.requires_grad else (None,) * len(args)
        return tuple(tl.zeros_like(a) if gi is None else gi for gi, a in zip(g, args))

    h = jacobian(gradient, tuple(xs), create_graph=create_graph, strict=strict)
    return h if in_tuple else h[0][0]


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for a function returning one single-element tensor."""
    tl = _tl()
    with tl.enable_grad():
        in_tuple, xs = _tuple(inputs, "inputs", "vhp")
        xs = _prepare(xs, create_graph)
        vs = _vectors(v, xs, "vhp", "input")
        y = _scalar_output(func, xs, "vhp")
        _check_outputs((y,), strict, "vhp")
        g = tl.autograd.grad(y, xs, create_graph=True, allow_unused=True) if y.requires_grad else (None,) * len(xs)
        g = _fill(g, xs, strict, "The jacobian of the user-provided function is independent of input {j}. This is "
                                 "not allowed in strict mode.")
        h = _grads(g, xs, vs, create_graph)
    h = _fill(h, xs, strict, "The hessian of the user-provided function with respect to input {j} is independent "
                             "of the input. This is not allowed in strict mode.")
    return _finish((y,), create_graph)[0], _untuple(_finish(h, create_graph), in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for a function returning one single-element tensor; H is symmetric for the
    twice continuously differentiable functions a Hessian is taken of, so this is vhp."""
    return vhp(func, inputs, v, create_graph=create_graph, strict=strict)
