"""torch.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) and torch.func (grad,
grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, vmap, functional_call) against torch."""
from __future__ import annotations

import numpy as np
import pytest

import tensorlab as tl

AF = tl.autograd.functional


def _np(t):
    if isinstance(t, (tuple, list)):
        return [_np(x) for x in t]
    return t.detach().cpu().numpy()


def _close(ours, theirs, rtol=1e-10, atol=1e-12):
    if isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            _close(a, b, rtol, atol)
        return
    if theirs is None:
        assert ours is None
        return
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(_np(ours), theirs.detach().numpy(), rtol=rtol, atol=atol)


def _pair(torch, device, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    arrs = [rng.standard_normal(s) for s in shapes]
    return [tl.tensor(a, device=device) for a in arrs], [torch.tensor(a) for a in arrs]


def f_one(lib, x):
    return (x.sin() * x.pow(2)).sum(0)


def f_two(lib, x, y):
    return (x * y.exp()).tanh(), (x.pow(3) + y).sum()


def f_scalar(lib, x, y):
    return (x.pow(2) * y.sin()).sum() + (x * y).prod()


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian(device, torch, create_graph, vectorize):
    (x, y), (tx, ty) = _pair(torch, device, (3, 2), (3, 2))
    _close(AF.jacobian(lambda a: f_one(tl, a), x, create_graph=create_graph, vectorize=vectorize),
           torch.autograd.functional.jacobian(lambda a: f_one(torch, a), tx, vectorize=vectorize))
    _close(AF.jacobian(lambda a, b: f_two(tl, a, b), (x, y), vectorize=vectorize),
           torch.autograd.functional.jacobian(lambda a, b: f_two(torch, a, b), (tx, ty), vectorize=vectorize))
    ours = AF.jacobian(lambda a, b: f_two(tl, a, b), (x, y), vectorize=True, strategy="forward-mode")
    _close(ours, torch.autograd.functional.jacobian(lambda a, b: f_two(torch, a, b), (tx, ty), vectorize=True,
                                                     strategy="forward-mode"))


def test_jacobian_create_graph_is_differentiable(device, torch):
    (x,), (tx,) = _pair(torch, device, (3,))
    x.requires_grad_(), tx.requires_grad_()
    j = AF.jacobian(lambda a: a.pow(3), x, create_graph=True)
    tj = torch.autograd.functional.jacobian(lambda a: a.pow(3), tx, create_graph=True)
    assert j.requires_grad
    j.sum().backward()
    tj.sum().backward()
    _close(x.grad, tx.grad)


def test_strict_mode_errors(device, torch):
    (x, y), (tx, ty) = _pair(torch, device, (3,), (3,))
    msg = "Output 0 of the user-provided function is independent of input 1"
    with pytest.raises(RuntimeError, match=msg):
        torch.autograd.functional.jacobian(lambda a, b: a * 2, (tx, ty), strict=True)
    with pytest.raises(RuntimeError, match=msg):
        AF.jacobian(lambda a, b: a * 2, (x, y), strict=True)
    _close(AF.jacobian(lambda a, b: a * 2, (x, y)), torch.autograd.functional.jacobian(lambda a, b: a * 2, (tx, ty)))
    with pytest.raises(TypeError):
        AF.vjp(lambda a: a, [1.0])


@pytest.mark.parametrize("create_graph", [False, True])
def test_vjp_jvp_hvp_vhp(device, torch, create_graph):
    (x, y, v1, v2, u), (tx, ty, tv1, tv2, tu) = _pair(torch, device, (3, 2), (3, 2), (3, 2), (3, 2), (2,))
    kw = dict(create_graph=create_graph)
    _close(AF.vjp(lambda a: f_one(tl, a), x, u, **kw),
           torch.autograd.functional.vjp(lambda a: f_one(torch, a), tx, tu, **kw))
    _close(AF.jvp(lambda a: f_one(tl, a), x, v1, **kw),
           torch.autograd.functional.jvp(lambda a: f_one(torch, a), tx, tv1, **kw))
    for name in ("hvp", "vhp"):
        _close(getattr(AF, name)(lambda a, b: f_scalar(tl, a, b), (x, y), (v1, v2), **kw),
               getattr(torch.autograd.functional, name)(lambda a, b: f_scalar(torch, a, b), (tx, ty), (tv1, tv2),
                                                        **kw))


@pytest.mark.parametrize("vectorize,strategy", [(False, "reverse-mode"), (True, "reverse-mode"),
                                                (True, "forward-mode")])
def test_hessian(device, torch, vectorize, strategy):
    (x, y), (tx, ty) = _pair(torch, device, (2, 2), (2, 2))
    kw = dict(vectorize=vectorize, outer_jacobian_strategy=strategy)
    _close(AF.hessian(lambda a, b: f_scalar(tl, a, b), (x, y), **kw),
           torch.autograd.functional.hessian(lambda a, b: f_scalar(torch, a, b), (tx, ty), **kw))
    with pytest.raises(RuntimeError, match="single element"):
        AF.hessian(lambda a: a * 2, x)


# -- torch.func --------------------------------------------------------------------------------------
def test_func_grad_and_composition(device, torch):
    (x, y), (tx, ty) = _pair(torch, device, (4,), (4,))
    fn = lambda lib: (lambda a, b: (a.sin() * b).sum())  # noqa: E731
    _close(tl.func.grad(fn(tl))(x, y), torch.func.grad(fn(torch))(tx, ty))
    _close(tl.func.grad(fn(tl), argnums=(0, 1))(x, y), torch.func.grad(fn(torch), argnums=(0, 1))(tx, ty))
    g, v = tl.func.grad_and_value(fn(tl), argnums=1)(x, y)
    tg, tv = torch.func.grad_and_value(fn(torch), argnums=1)(tx, ty)
    _close([g, v], [tg, tv])
    assert not g.requires_grad
    # second derivative: grad of grad
    s = lambda lib: (lambda a: a.sin().sum())  # noqa: E731
    inner = lambda a: tl.func.grad(s(tl))(a).sum()  # noqa: E731
    tinner = lambda a: torch.func.grad(s(torch))(a).sum()  # noqa: E731
    _close(tl.func.grad(inner)(x), torch.func.grad(tinner)(tx))
    # has_aux
    g, aux = tl.func.grad(lambda a: ((a * a).sum(), a.mean()), has_aux=True)(x)
    tg, taux = torch.func.grad(lambda a: ((a * a).sum(), a.mean()), has_aux=True)(tx)
    _close([g, aux], [tg, taux])
    with pytest.raises(RuntimeError, match="scalar"):
        tl.func.grad(lambda a: a * 2)(x)


def test_func_vjp_jvp(device, torch):
    (x, y, c), (tx, ty, tc) = _pair(torch, device, (3,), (3,), (3,))
    out, fn = tl.func.vjp(lambda a, b: a * b.cos(), x, y)
    tout, tfn = torch.func.vjp(lambda a, b: a * b.cos(), tx, ty)
    _close(out, tout)
    _close(fn(c), tfn(tc))
    _close(tl.func.jvp(lambda a: a.exp() * a, (x,), (c,)), torch.func.jvp(lambda a: a.exp() * a, (tx,), (tc,)))


@pytest.mark.parametrize("name", ["jacrev", "jacfwd"])
def test_func_jacobians_and_hessian(device, torch, name):
    (x, y), (tx, ty) = _pair(torch, device, (3,), (2,))
    f = lambda lib: (lambda a, b: lib.outer(a.sin(), b) if hasattr(lib, "outer") else None)  # noqa: E731
    f = lambda a, b: (a.sin()[:, None] * b[None, :]).sum(1)  # noqa: E731
    _close(getattr(tl.func, name)(f)(x, y), getattr(torch.func, name)(f)(tx, ty))
    _close(getattr(tl.func, name)(f, argnums=(0, 1))(x, y), getattr(torch.func, name)(f, argnums=(0, 1))(tx, ty))
    h = lambda a: (a.pow(3) * a.sin()).sum()  # noqa: E731
    _close(tl.func.hessian(h)(x), torch.func.hessian(h)(tx))


def test_vmap(device, torch):
    (x, y, w), (tx, ty, tw) = _pair(torch, device, (5, 3), (3, 5), (3, 2))
    f = lambda a, b: (a * b).sum() + a.max()  # noqa: E731
    _close(tl.func.vmap(f, in_dims=(0, 1))(x, y), torch.func.vmap(f, in_dims=(0, 1))(tx, ty))
    g = lambda a, m: (a @ m, a.sum())  # noqa: E731
    _close(tl.func.vmap(g, in_dims=(0, None), out_dims=(1, 0))(x, w),
           torch.func.vmap(g, in_dims=(0, None), out_dims=(1, 0))(tx, tw))
    # per-sample gradients: vmap(grad)
    loss = lambda m, a: (a @ m).tanh().sum()  # noqa: E731
    _close(tl.func.vmap(tl.func.grad(loss), in_dims=(None, 0))(w, x),
           torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0))(tw, tx))
    with pytest.raises(ValueError, match="same size"):
        tl.func.vmap(f, in_dims=(0, 0))(x, y)


def test_functional_call(device, torch):
    m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    ours = tl.nn.Sequential(tl.nn.Linear(3, 4), tl.nn.BatchNorm1d(4)).to(device)
    rng = np.random.default_rng(0)
    new = {k: rng.standard_normal(tuple(v.shape)).astype('float32') for k, v in m.named_parameters()}
    x = rng.standard_normal((5, 3)).astype('float32')
    tout = torch.func.functional_call(m, {k: torch.tensor(v) for k, v in new.items()}, (torch.tensor(x),))
    out = tl.func.functional_call(ours, {k: tl.tensor(v, device=device) for k, v in new.items()},
                                  (tl.tensor(x, device=device),))
    _close(out, tout, rtol=1e-5, atol=1e-6)
    # module restored, and gradients flow to the given tensors
    assert not np.allclose(_np(ours[0].weight), new["0.weight"])
    params = {k: tl.tensor(v, device=device, requires_grad=True) for k, v in new.items()}
    tparams = {k: torch.tensor(v, requires_grad=True) for k, v in new.items()}
    tl.func.functional_call(ours, params, tl.tensor(x, device=device)).sum().backward()
    torch.func.functional_call(m, tparams, torch.tensor(x)).sum().backward()
    for k in new:
        _close(params[k].grad, tparams[k].grad, rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match="Missing key"):
        tl.func.functional_call(ours, {"0.weight": params["0.weight"]}, (tl.tensor(x, device=device),), strict=True)


def test_forward_mode_jacobian_with_create_graph(device, torch):
    """torch refuses create_graph with strategy="forward-mode"; tensorlab computes it (a
    documented divergence): the values are the reverse-mode Jacobian's, and differentiable."""
    (x,), (tx,) = _pair(torch, device, (3,))
    x.requires_grad_()
    j = AF.jacobian(lambda a: a.pow(3).sin(), x, create_graph=True, strategy="forward-mode", vectorize=True)
    _close(j, torch.autograd.functional.jacobian(lambda a: a.pow(3).sin(), tx))
    assert j.requires_grad
    j.sum().backward()
    tx.requires_grad_()
    torch.autograd.functional.jacobian(lambda a: a.pow(3).sin(), tx, create_graph=True).sum().backward()
    _close(x.grad, tx.grad)
