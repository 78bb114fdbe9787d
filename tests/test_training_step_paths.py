"""The training step's fast paths (issue 20): Module.__call__'s one-read hook check, the
optimizer's undetached parameters, the engine's order among AccumulateGrad nodes, and an MLP
trained for a few SGD steps against torch from the same weights."""
import copy
import pickle

import numpy as np
import pytest

import tensorlab as tl


def test_hooks_registered_after_first_call_and_removed(device):
    m = tl.nn.Linear(3, 2).to(device)
    x = tl.ones(1, 3, device=device)
    m(x)  # the fast path first
    seen = []
    h = m.register_forward_hook(lambda mod, args, out: seen.append(out.shape) or out * 2)
    doubled = m(x)
    assert seen == [(1, 2)]
    h.remove()
    plain = m(x)
    assert seen == [(1, 2)]  # removed: not called again
    np.testing.assert_allclose(doubled.detach().cpu().numpy(), 2 * plain.detach().cpu().numpy(), rtol=1e-6)
    pre = m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,))
    np.testing.assert_allclose(m(x).detach().cpu().numpy(), m.bias.detach().cpu().numpy()[None], rtol=1e-6)
    pre.remove()


def _double(mod, args, out):
    return out * 2


def test_hooks_survive_copy_and_pickle():
    m = tl.nn.Linear(3, 2)
    m.register_forward_hook(_double)
    x = tl.ones(1, 3)
    want = m(x).detach().numpy()
    for other in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        np.testing.assert_allclose(other(x).detach().numpy(), want, rtol=1e-6)
        other._forward_hooks.clear()
        np.testing.assert_allclose(other(x).detach().numpy(), want / 2, rtol=1e-6)


def test_sgd_step_with_gradients_that_have_a_graph(device):
    w = tl.tensor([1.0, 2.0], device=device, requires_grad=True)
    (g,) = tl.autograd.grad((w * w).sum(), w, create_graph=True)  # 2w, part of a graph
    w.grad = g
    opt = tl.optim.SGD([w], lr=0.5, momentum=0.9)
    opt.step()
    assert w.requires_grad and w.grad_fn is None and w.is_leaf
    np.testing.assert_allclose(w.detach().cpu().numpy(), [0.0, 0.0])
    buf = opt.state[w]["momentum_buffer"]
    assert not buf.requires_grad and buf.grad_fn is None


def test_accumulate_order_bias_before_weight(device):
    # as torch's AddmmBackward0: the bias's gradient is ready before the weight's (whose goes
    # through TBackward0); DistributedDataParallel builds its buckets in this order
    model = tl.nn.Sequential(tl.nn.Linear(3, 4), tl.nn.ReLU(), tl.nn.Linear(4, 2)).to(device)
    names = {id(p): n for n, p in model.named_parameters()}
    order = []
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda t: order.append(names[id(t)]))
    model(tl.ones(5, 3, device=device)).sum().backward()
    assert order == ["2.bias", "2.weight", "0.bias", "0.weight"]


def test_mlp_sgd_steps_match_torch(torch):
    from tensorlab.bench import models
    losses = {}
    for lib in ("tensorlab", "torch"):
        model, opt, step = models.build("mlp", lib, "tiny")
        losses[lib] = [float(step().item()) for _ in range(4)]
    np.testing.assert_allclose(losses["tensorlab"], losses["torch"], rtol=1e-5)
