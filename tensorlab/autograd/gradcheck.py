"""gradcheck: analytical (backward) Jacobians against central finite differences.

Floating-point inputs are checked as float64 copies (finite differences in float32 are too
coarse to compare); each Jacobian is (output elements x input elements)."""
from __future__ import annotations

from .. import layout as L
from ..tensor import Tensor
from . import engine
from .grad_mode import enable_grad, no_grad


class GradcheckError(RuntimeError):
    """gradcheck found a mismatch (a RuntimeError, as torch's)."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _float64_inputs(inputs):
    from .. import dtypes
    out = []
    for x in inputs:
        if isinstance(x, Tensor) and x._dtype.is_floating_point:
            c = x.detach().to(dtypes.float64, copy=True)
            c.requires_grad_(x._requires_grad)
            out.append(c)
        else:
            out.append(x)
    return tuple(out)


def _realified(func, inputs):
    """func and inputs with every complex tensor seen as its (..., 2) real view (torch checks complex
    functions as functions of real and imaginary parts): complex inputs arrive as real pairs and are
    viewed back as complex for func; complex outputs leave as real pairs."""
    from ..ops.complex_ops import view_as_complex, view_as_real
    cpos = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x._dtype.category == 3]
    new = list(inputs)
    for i in cpos:
        r = view_as_real(inputs[i].detach()).clone()
        r.requires_grad_(inputs[i]._requires_grad)
        new[i] = r

    def f(*xs):
        xs = list(xs)
        for i in cpos:
            xs[i] = view_as_complex(xs[i])
        return tuple(view_as_real(o) if isinstance(o, Tensor) and o._dtype.category == 3 else o
                     for o in _as_tuple(func(*xs)))
    return f, tuple(new)


def _differentiable(outputs):
    return [(k, o) for k, o in enumerate(outputs) if isinstance(o, Tensor) and o._dtype.is_floating_point]


def _snapshot(out):
    return tuple(o.clone() if isinstance(o, Tensor) else o for o in _as_tuple(out))


def _unravel(j, shape):
    at = []
    for n in reversed(shape):
        j, r = divmod(j, n)
        at.append(r)
    return tuple(reversed(at))


def _numerical(func, inputs, diff, outputs, eps):
    """{(input i, output k): Jacobian} by central differences, perturbing one element at a time."""
    from ..ops.shape import stack
    from ..ops.creation import zeros
    jac = {}
    with no_grad():
        for i in diff:
            x = inputs[i].detach()  # shares storage: writes perturb the input func reads
            cols = {k: [] for k, _ in outputs}
            for j in range(x.numel()):
                at = _unravel(j, x.shape)
                orig = x[at].item()
                x[at] = orig + eps
                plus = _snapshot(func(*inputs))  # a copy: outputs may be views of the input
                x[at] = orig - eps
                minus = _snapshot(func(*inputs))
                x[at] = orig
                for k, o in outputs:
                    d = (plus[k].to(o._dtype) - minus[k].to(o._dtype)) / (2 * eps)
                    cols[k].append(d.reshape(-1))
            for k, o in outputs:
                n = o.numel()
                jac[i, k] = (stack(cols[k], 1) if cols[k] else zeros((n, 0), dtype=o._dtype, device=o.device))
    return jac


def _analytical(inputs, diff, outputs):
    """{(i, k): Jacobian} row by row: one backward pass per output element."""
    from ..ops.creation import zeros
    from ..ops.shape import stack
    jac = {}
    for k, o in outputs:
        rows = {i: [] for i in diff}
        for e in range(o.numel()):
            if not o._requires_grad:
                for i in diff:
                    rows[i].append(zeros((inputs[i].numel(),), dtype=o._dtype, device=o.device))
                continue
            go = zeros(o.shape, dtype=o._dtype, device=o.device)
            go.view(-1)[e] = 1.0
            grads = engine.grad([o], [inputs[i] for i in diff], [go], retain_graph=True, allow_unused=True)
            for i, g in zip(diff, grads):
                x = inputs[i]
                if g is None:
                    g = zeros(x.shape, dtype=x._dtype, device=x.device)
                elif g.shape != x.shape:
                    raise GradcheckError(f"Gradient for input {i} has shape {list(g.shape)} but the input has shape "
                                         f"{list(x.shape)}")
                rows[i].append(g.reshape(-1).to(o._dtype))
        for i in diff:
            n = inputs[i].numel()
            jac[i, k] = (stack(rows[i], 0) if rows[i] else zeros((0, n), dtype=o._dtype, device=o.device))
    return jac


def _close(a, n, atol, rtol):
    if a.numel() == 0:
        return True
    return bool((((a - n).abs() <= atol + rtol * n.abs()) | ((a == n))).all())


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_grad_dtypes=False, check_undefined_grad=True, fast_mode=False):
    """True when backward's Jacobian of `func` at `inputs` matches finite differences within
    |analytical - numerical| <= atol + rtol * |numerical|. Raises GradcheckError describing the
    first mismatch (or returns False with raise_exception=False)."""
    def fail(msg):
        if raise_exception:
            raise GradcheckError(msg)
        return False

    inputs = _as_tuple(inputs)
    func, inputs = _realified(func, inputs)
    if not any(isinstance(x, Tensor) and x._requires_grad for x in inputs):
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    xs = _float64_inputs(inputs)
    diff = [i for i, x in enumerate(xs) if isinstance(x, Tensor) and x._requires_grad]
    for i in diff:
        lay = xs[i]._meta.layout
        if L.has_internal_overlap(lay.shape, lay.stride):
            raise ValueError(f"The {i}th input has a dimension with stride 0 (its elements overlap). gradcheck only "
                             f"supports inputs that are non-overlapping to be able to compute the numerical "
                             f"gradients correctly. You should call .contiguous on the input before passing it to "
                             f"gradcheck.")
    with enable_grad():
        outs = _as_tuple(func(*xs))
        outputs = _differentiable(outs)
        if check_grad_dtypes:
            for k, o in outputs:
                if o._requires_grad:
                    gs = engine.grad([o], [xs[i] for i in diff], [o.detach() * 0 + 1], retain_graph=True,
                                     allow_unused=True)
                    for i, g in zip(diff, gs):
                        if g is not None and g._dtype is not xs[i]._dtype:
                            return fail(f"Gradient has dtype mismatch: input {i} is {xs[i]._dtype} but its gradient "
                                        f"is {g._dtype}")
        analytical = _analytical(xs, diff, outputs)
        again = _analytical(xs, diff, outputs) if outputs else {}
    numerical = _numerical(func, xs, diff, outputs, eps)
    for (i, k), a in analytical.items():
        n = numerical[i, k].to(a.device)  # a cross-device op (copy_ from CUDA into a CPU tensor)
        if not _close(a, n, atol, rtol):
            diffs = (a - n).abs()
            worst = int(diffs.reshape(-1).argmax().item()) if diffs.numel() else 0
            r, c = divmod(worst, max(a.shape[1], 1))
            return fail(f"Jacobian mismatch for output {k} with respect to input {i},\n"
                        f"numerical:{n}\nanalytical:{a}\n"
                        f"largest difference {diffs.max().item():.6g} at d(output {k})[{r}] / d(input {i})[{c}] "
                        f"(analytical {a[r, c].item():.6g}, numerical {n[r, c].item():.6g}; atol={atol}, "
                        f"rtol={rtol}, eps={eps})")
        b = again[i, k]
        if a.numel() and bool(((a - b).abs() > nondet_tol).any()):
            return fail(f"Backward is not reentrant, i.e., running backward with same input and grad_output multiple "
                        f"times gives different values, although analytical gradient matches numerical gradient. "
                        f"The tolerance for nondeterminism was {nondet_tol}.")
    return True
