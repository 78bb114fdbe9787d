"""The nn.Module API beyond layers, against torch: containers (ModuleList, ModuleDict, ParameterList,
ParameterDict, Sequential arithmetic), printed module trees, state_dict keys/order/prefix/keep_vars,
load_state_dict results, forward pre/post hooks (order, prepend, with_kwargs, always_call, removal),
full backward (pre) hooks, get_parameter/get_buffer, weight tying, conversion of buffers, and the
torch.nn.modules.* import paths."""
from __future__ import annotations

import re
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import tensorlab as tl
import tensorlab.nn as nn


def _np(t):
    return t.detach().cpu().numpy()


def _norm(text):
    return re.sub(r"\btensorlab\.", "torch.", text)


def _kw(lib, device):
    return {"device": device} if lib is tl else {}


# -- architectures built the same way in both libraries -----------------------------------------
def _model(lib, device="cpu"):
    kw = _kw(lib, device)

    class Block(lib.nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj = lib.nn.Linear(d, d, **kw)
            self.act = lib.nn.GELU(approximate="tanh")
            self.register_buffer("count", lib.zeros((), dtype=lib.int64, **kw))

        def forward(self, x):
            return self.act(self.proj(x))

    class Model(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", lib.zeros(4, **kw))
            self.embed = lib.nn.Linear(3, 4, **kw)
            self.layers = lib.nn.ModuleList([Block(4) for _ in range(3)] + [lib.nn.Identity()])
            self.heads = lib.nn.ModuleDict(OrderedDict(cls=lib.nn.Linear(4, 2, **kw),
                                                       reg=lib.nn.Sequential(lib.nn.Linear(4, 1, **kw),
                                                                             lib.nn.Sigmoid())))
            self.gains = lib.nn.ParameterList([lib.nn.Parameter(lib.ones(4, **kw)), lib.zeros(2, 2, **kw)])
            self.extra = lib.nn.ParameterDict({"z": lib.nn.Parameter(lib.ones(1, **kw)), "a": lib.zeros(3, **kw)})
            self.empty = lib.nn.ModuleList()
            self.tied = lib.nn.Linear(4, 3, bias=False, **kw)
            self.untied = lib.nn.Linear(4, 3, bias=False, **kw)
            self.untied.weight = self.tied.weight  # one Parameter in two modules

        def forward(self, x):
            h = self.embed(x) - self.mean
            for layer in self.layers:
                h = layer(h)
            h = h * self.gains[0]
            return self.heads["cls"](h), self.heads["reg"](h) + self.extra["z"]
    return Model()


@pytest.fixture
def pair(torch, device):
    return _model(tl, device), _model(torch)


def test_repr_tree_matches_torch(pair, device):
    ours, theirs = pair
    text = _norm(repr(ours))
    if device == "cuda":  # parameter-container members on a GPU print their device, as torch's
        assert text.count(" (cuda:0)]") == 4
        text = text.replace(" (cuda:0)]", "]").replace("torch.cuda.", "torch.")
    assert text == repr(theirs)
    assert "(0-2): 3 x Block(" in repr(ours)
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_repr_of_lists_with_different_members(torch):
    def build(lib):
        return lib.nn.ModuleList([lib.nn.Linear(2, 2), lib.nn.Linear(2, 2), lib.nn.ReLU(), lib.nn.ReLU(),
                                  lib.nn.Linear(2, 3), lib.nn.Linear(2, 2)])
    assert repr(build(tl)) == repr(build(torch))
    assert repr(build(tl)[1:3]) == repr(build(torch)[1:3])


def test_traversal_and_state_dict_match_torch(pair):
    ours, theirs = pair
    for fn in ("named_parameters", "named_buffers", "named_modules", "named_children"):
        assert [n for n, _ in getattr(ours, fn)()] == [n for n, _ in getattr(theirs, fn)()], fn
    for kw in ({"remove_duplicate": False}, {"prefix": "net"}, {"recurse": False}):
        assert [n for n, _ in ours.named_parameters(**kw)] == [n for n, _ in theirs.named_parameters(**kw)], kw
    assert [n for n, _ in ours.named_modules(remove_duplicate=False)] == \
        [n for n, _ in theirs.named_modules(remove_duplicate=False)]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours.state_dict(prefix="m.")) == list(theirs.state_dict(prefix="m."))
    assert list(ours.state_dict()._metadata) == list(theirs.state_dict()._metadata)
    assert ours.state_dict()._metadata["layers.0"] == theirs.state_dict()._metadata["layers.0"] == {"version": 1}
    assert [type(m).__name__ for m in ours.modules()] == [type(m).__name__ for m in theirs.modules()]
    assert [type(m).__name__ for m in ours.children()] == [type(m).__name__ for m in theirs.children()]


def test_weight_tying_lists_the_parameter_once(pair):
    ours, theirs = pair
    params = list(ours.parameters())
    assert sum(p is ours.tied.weight for p in params) == 1
    assert len(params) == len(list(theirs.parameters()))
    sd = ours.state_dict(keep_vars=True)
    assert sd["tied.weight"] is sd["untied.weight"] is ours.tied.weight
    plain = ours.state_dict()
    assert type(plain["tied.weight"]) is tl.Tensor and not plain["tied.weight"].requires_grad
    assert plain["tied.weight"].untyped_storage() is ours.tied.weight.untyped_storage()


def test_forward_matches_torch_with_copied_weights(pair, torch, device):
    ours, theirs = pair
    ours.load_state_dict({k: tl.tensor(v.detach().numpy(), device=device) for k, v in theirs.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 3)).astype("float32")
    for a, b in zip(ours(tl.tensor(x, device=device)), theirs(torch.tensor(x))):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def _load(model, sd, strict):
    try:
        r = model.load_state_dict(sd, strict=strict)
        return "ok", r.missing_keys, r.unexpected_keys, repr(r)
    except RuntimeError as e:
        return "error", _norm(str(e))


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize("edit", ["none", "drop_list_member", "extra_dict_key", "shape", "drop_buffer"])
def test_load_state_dict_results_match_torch(pair, torch, strict, edit):
    ours, theirs = pair
    sds = [ours.state_dict(), theirs.state_dict()]
    for sd, lib in zip(sds, (tl, torch)):
        if edit == "drop_list_member":
            del sd["gains.1"], sd["layers.2.proj.bias"]
        elif edit == "extra_dict_key":
            sd["extra.q"] = lib.ones(1)
            sd["layers.9.proj.weight"] = lib.ones(1)
        elif edit == "shape":
            sd["gains.0"] = lib.ones(5)
        elif edit == "drop_buffer":
            del sd["layers.1.count"], sd["mean"]
    assert _load(ours, sds[0], strict) == _load(theirs, sds[1], strict)


# -- containers ----------------------------------------------------------------------------------
def _list_ops(lib):
    ml = lib.nn.ModuleList([lib.nn.Linear(1, 1), lib.nn.ReLU()])
    ml.append(lib.nn.Tanh()).extend([lib.nn.Sigmoid(), lib.nn.Identity()])
    ml.insert(1, lib.nn.GELU())
    ml += [lib.nn.Dropout(0.1)]
    popped = ml.pop(2)
    del ml[-1]
    del ml[0:4:2]
    joined = ml + lib.nn.ModuleList([lib.nn.ReLU()])
    ml[0] = lib.nn.Softmax(dim=0)
    out = [type(popped).__name__, len(ml), repr(ml), repr(joined), repr(ml[::-1]), list(ml._modules),
           type(ml[-1]).__name__, [n for n in dir(ml) if n.isdigit()]]
    with pytest.raises(IndexError, match="index 9 is out of range"):
        ml[9]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        ml.extend(3)
    return out


def test_module_list_operations_match_torch(torch):
    assert _list_ops(tl) == _list_ops(torch)


def _dict_ops(lib):
    md = lib.nn.ModuleDict({"b": lib.nn.ReLU(), "a": lib.nn.Tanh()})  # a dict keeps its order
    md.update([("c", lib.nn.Sigmoid()), ("a", lib.nn.GELU())])
    md["d"] = lib.nn.Identity()
    popped = md.pop("b")
    out = [list(md.keys()), [type(v).__name__ for v in md.values()], [k for k, _ in md.items()], "c" in md, len(md),
           type(popped).__name__, repr(md), list(iter(md))]
    del md["c"]
    out.append(list(md))
    md.clear()
    out.append(len(md))
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        md.update([("x",)])
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable"):
        md.update(3)
    with pytest.raises(KeyError):
        md["missing"]
    return out


def test_module_dict_operations_match_torch(torch):
    assert _dict_ops(tl) == _dict_ops(torch)


def _param_list_ops(lib, device):
    kw = _kw(lib, device)
    pl = lib.nn.ParameterList([lib.ones(2, **kw)])
    pl.append(lib.nn.Parameter(lib.zeros(3, **kw), requires_grad=False)).extend([lib.ones(1, 1, **kw)])
    pl.append("not a tensor")
    pl[0] = lib.full((2,), 5.0, **kw)
    head = pl[:2]
    out = [len(pl), [type(p).__name__ for p in pl], [p.requires_grad for p in list(pl)[:3]],
           _norm(repr(pl)), len(head), [n for n, _ in pl.named_parameters()], float(pl[0].sum().item())]
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        pl(1)
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable, but got Tensor"):
        pl.extend(lib.ones(2, **kw))
    return out


def test_parameter_list_matches_torch(torch, device):
    ours = _param_list_ops(tl, device)
    if device == "cuda":  # cuda members print their device, as torch's
        assert ours[3].count(" (cuda:0)]") == 3
        ours[3] = ours[3].replace(" (cuda:0)]", "]")
    assert ours == _param_list_ops(torch, "cpu")


def _param_dict_ops(lib, device):
    kw = _kw(lib, device)
    pd = lib.nn.ParameterDict({"w": lib.ones(2, **kw), "b": lib.zeros(1, **kw)})  # a plain dict: sorted keys
    pd.update(OrderedDict([("z", lib.ones(1, **kw)), ("a", lib.nn.Parameter(lib.ones(3, **kw)))]))
    pd["s"] = "text"
    d = pd.setdefault("new", lib.ones(4, **kw))
    merged = pd | lib.nn.ParameterDict({"m": lib.ones(1, **kw)})
    k, v = pd.popitem()
    out = [list(pd.keys()), [type(x).__name__ for x in pd.values()], _norm(repr(pd)), k, type(v).__name__,
           type(d).__name__, list(merged.keys()), "w" in pd, pd.get("nope", 7), list(reversed(pd)),
           [n for n, _ in pd.named_parameters()], list(pd.fromkeys(["p", "q"]).keys())]
    del pd["w"]
    out.append(list(pd))
    pd.clear()
    out.append(len(pd))
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key"):
        pd[3] = lib.ones(1, **kw)
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)
    return out


def test_parameter_dict_matches_torch(torch, device):
    ours, theirs = _param_dict_ops(tl, device), _param_dict_ops(torch, "cpu")
    if device == "cuda":
        assert ours[2].count(" (cuda:0)]") == 4
        ours[2] = ours[2].replace(" (cuda:0)]", "]").replace("torch.cuda.", "torch.")
    assert ours == theirs


def _seq_ops(lib):
    s = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.Tanh())
    t = s + lib.nn.Sequential(lib.nn.Sigmoid())
    u = s * 2
    v = 2 * s
    s += lib.nn.Sequential(lib.nn.Identity())
    w = lib.nn.Sequential(lib.nn.ReLU(), lib.nn.GELU())
    w *= 3
    popped = w.pop(1)
    out = [repr(t), repr(u), repr(v), repr(s), repr(w), type(popped).__name__, len(w)]
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        s + lib.nn.ReLU()
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        s * 0
    with pytest.raises(TypeError, match="unsupported operand type"):
        s * 1.5
    return out


def test_sequential_arithmetic_matches_torch(torch):
    assert _seq_ops(tl) == _seq_ops(torch)


def test_containers_follow_the_module_to_a_device_and_dtype(device):
    m = _model(tl)
    m.to(device)
    assert all(p.device.type == device for p in m.parameters())
    assert all(b.device.type == device for b in m.buffers())
    m.double()
    assert m.gains[0].dtype == tl.float64 and m.extra["a"].dtype == tl.float64 and m.mean.dtype == tl.float64
    assert m.layers[0].count.dtype == tl.int64  # integer buffers keep their dtype
    m.half()
    assert m.mean.dtype == tl.float16 and m.layers[0].proj.weight.dtype == tl.float16
    m.to(tl.float32)
    assert isinstance(m.gains[0], nn.Parameter) and m.gains[0].dtype == tl.float32


# -- attribute rules -----------------------------------------------------------------------------
def _attr_rules(lib):
    m = lib.nn.Linear(2, 2)
    out = []
    for action in (lambda: setattr(m, "weight", lib.ones(2, 2)), lambda: setattr(m, "bias", 3),
                   lambda: m.get_parameter("nope"), lambda: m.get_parameter("in_features"),
                   lambda: m.get_buffer("weight"), lambda: m.get_submodule("x.y"), lambda: m.get_buffer("a.b")):
        try:
            action()
            out.append("ok")
        except (TypeError, AttributeError) as e:
            out.append((type(e).__name__, _norm(str(e)).replace("torch.nn.Parameter", "X").replace("torch.", "")))
    m.bias = None
    out.append([n for n, _ in m.named_parameters()])
    m.register_buffer("stat", lib.ones(1), persistent=False)
    m.stat = lib.zeros(1)  # reassigning keeps it non-persistent
    out.append(list(m.state_dict()))
    m.stat = lib.nn.Parameter(lib.ones(1))  # a Parameter under a buffer's name replaces the buffer
    out.append((list(m.state_dict()), [n for n, _ in m.named_buffers()]))
    del m.stat
    out.append(list(m.state_dict()))
    seq = lib.nn.Sequential(lib.nn.Linear(1, 1))
    out.append((m.get_parameter("weight") is m.weight, seq.get_parameter("0.bias") is seq[0].bias))
    seq[0].register_buffer("rb", lib.ones(1))
    out.append(seq.get_buffer("0.rb") is seq[0].rb)
    return out


def test_attribute_rules_match_torch(torch):
    assert _attr_rules(tl) == _attr_rules(torch)


# -- forward hooks -------------------------------------------------------------------------------
def _hook_run(lib):
    log = []
    m = lib.nn.Linear(2, 2)
    h1 = m.register_forward_pre_hook(lambda mod, args: log.append(("pre1", len(args))))
    m.register_forward_pre_hook(lambda mod, args: (args[0] * 0,), prepend=False)
    m.register_forward_pre_hook(lambda mod, args: log.append(("pre0", type(mod).__name__)), prepend=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: log.append(("prekw", sorted(kwargs))), with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append(("post1", float(out.detach().sum()))))
    m.register_forward_hook(lambda mod, args, kwargs, out: out + 1, with_kwargs=True)
    m.register_forward_hook(lambda mod, args, out: log.append(("post0", float(args[0].sum()))), prepend=True)
    m.register_forward_hook(lambda mod, args, out: log.append(("last", float(out.detach().sum()))))
    with lib.no_grad():
        m.weight.fill_(1.0)
        m.bias.fill_(0.5)
    r1 = m(lib.ones(1, 2))
    h1.remove()
    h1.remove()  # removing twice is fine
    r2 = m(lib.ones(1, 2))
    log.append(("results", r1.tolist(), r2.tolist()))
    with m.register_forward_hook(lambda mod, args, out: log.append("ctx")):
        m(lib.ones(1, 2))
    m(lib.ones(1, 2))
    return log


def test_forward_hook_order_and_results_match_torch(torch):
    assert _hook_run(tl) == _hook_run(torch)


def _hook_kwargs_and_errors(lib):
    log = []

    class KW(lib.nn.Module):
        def forward(self, x, *, scale=1.0):
            return x * scale

    m = KW()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": kwargs.get("scale", 1.0) * 10}),
                                with_kwargs=True)
    out = [m(lib.ones(1), scale=2.0).tolist()]
    bad = KW()
    bad.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    try:
        bad(lib.ones(1))
    except RuntimeError as e:
        out.append(str(e))

    class Boom(lib.nn.Module):
        def forward(self, x):
            raise ValueError("boom")

    b = Boom()
    b.register_forward_hook(lambda mod, args, res: log.append(("always", res)), always_call=True)
    b.register_forward_hook(lambda mod, args, res: log.append("normal"))
    try:
        b(lib.ones(1))
    except ValueError as e:
        out.append(str(e))
    out.append(log)
    return out


def test_forward_hook_kwargs_errors_and_always_call_match_torch(torch):
    assert _hook_kwargs_and_errors(tl) == _hook_kwargs_and_errors(torch)


# -- backward hooks ------------------------------------------------------------------------------
def _backward_hooks(lib, device):
    kw = _kw(lib, device)
    rec = []
    m = lib.nn.Linear(3, 2, **kw)
    with lib.no_grad():
        m.weight.copy_(lib.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 2.0]], **kw))
        m.bias.zero_()

    def bhook(mod, gin, gout):
        rec.append(("full", [None if g is None else g.tolist() for g in gin], [g.tolist() for g in gout]))
        return (gin[0] * 2,)

    def pre(mod, gout):
        rec.append(("pre", [g.tolist() for g in gout]))
        return (gout[0] + 1,)

    m.register_full_backward_hook(bhook)
    m.register_full_backward_pre_hook(pre)
    x = lib.tensor([[1.0, -1.0, 0.5]], requires_grad=True, **kw)
    y = m(x)
    (y * lib.tensor([[1.0, 2.0]], **kw)).sum().backward()
    rec.append(("x.grad", x.grad.tolist(), m.weight.grad.tolist()))

    n = lib.nn.Linear(2, 1, **kw)  # no input requires grad: the hook fires at the outputs with None inputs
    n.register_full_backward_hook(lambda mod, gin, gout: rec.append(("noin", gin, len(gout))))
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        n(lib.ones(1, 2, **kw)).sum().backward()
    rec.append(any("Full backward hook is firing" in str(x.message) for x in w))
    return rec


def test_full_backward_hooks_match_torch(torch, device):
    assert _backward_hooks(tl, device) == _backward_hooks(torch, "cpu")


def test_backward_hook_removal_and_multi_input(torch):
    def run(lib):
        rec = []

        class Two(lib.nn.Module):
            def forward(self, a, b, k):
                return a * b * k, a + b

        m = Two()
        h = m.register_full_backward_hook(lambda mod, gin, gout: rec.append(
            ([None if g is None else g.tolist() for g in gin], [None if g is None else g.tolist() for g in gout])))
        a = lib.tensor([2.0], requires_grad=True)
        b = lib.tensor([3.0])
        p, s = m(a, b, 4.0)
        (p + 2 * s).sum().backward()
        h.remove()
        p, s = m(a, b, 4.0)
        p.sum().backward()
        rec.append(a.grad.tolist())
        return rec
    assert run(tl) == run(torch)


# -- torch.nn.modules.* paths --------------------------------------------------------------------
def test_nn_modules_paths_mirror_torch(torch):
    import tensorlab.nn.modules as ours
    import torch.nn.modules as theirs
    import importlib
    for name in ours.__all__:
        cls = getattr(ours, name)
        mod = cls.__module__.replace("tensorlab.nn.", "")
        torch_mod = getattr(theirs, name).__module__.replace("torch.nn.modules.", "")
        mirrored = importlib.import_module(f"tensorlab.nn.modules.{torch_mod}")
        assert getattr(mirrored, name) is cls, (name, mod, torch_mod)
        assert getattr(nn, name) is cls
    for path, name in [("module", "Module"), ("container", "Sequential"), ("container", "ModuleList"),
                       ("linear", "Linear"), ("activation", "ReLU"), ("loss", "MSELoss"), ("dropout", "Dropout")]:
        assert getattr(importlib.import_module(f"tensorlab.nn.modules.{path}"), name) is getattr(nn, name)
    assert nn.modules.loss._Loss is nn.loss._Loss


def _buffer_rules(lib):
    m = lib.nn.Linear(2, 2)
    m.stat = lib.nn.Buffer(lib.ones(2))
    m.scratch = lib.nn.Buffer(lib.zeros(1), persistent=False)
    b = lib.nn.Buffer(lib.nn.Parameter(lib.ones(1)))
    out = [[n for n, _ in m.named_buffers()], list(m.state_dict()), isinstance(m.stat, lib.nn.Buffer),
           isinstance(lib.ones(1), lib.nn.Buffer), type(b).__name__, b.requires_grad, tuple(lib.nn.Buffer().shape)]
    m.stat = lib.zeros(3)  # a plain tensor reassigned to a buffer name stays a buffer
    out.append((tuple(m.stat.shape), list(m.state_dict())))
    try:
        m.weight = lib.nn.Buffer(lib.ones(2, 2))
    except TypeError as e:
        out.append(_norm(str(e)).replace("torch.nn.Parameter", "X"))
    return out


def test_buffer_assignment_matches_torch(torch):
    assert _buffer_rules(tl) == _buffer_rules(torch)


def _extra_state(lib):
    class WithState(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(1, 1)
            self.config = {"n": 1}

        def get_extra_state(self):
            return dict(self.config)

        def set_extra_state(self, state):
            self.config = dict(state)

    outer = lib.nn.Sequential(WithState(), lib.nn.ReLU())
    sd = outer.state_dict()
    out = [list(sd), sd["0._extra_state"]]
    sd["0._extra_state"] = {"n": 7}
    out.append(repr(outer.load_state_dict(sd)))
    out.append(outer[0].config)
    del sd["0._extra_state"]
    r = outer.load_state_dict(sd, strict=False)
    out.append((r.missing_keys, r.unexpected_keys))
    plain = lib.nn.Sequential(lib.nn.Linear(1, 1))
    psd = plain.state_dict()
    psd["0._extra_state"] = 3
    r = plain.load_state_dict(psd, strict=False)
    out.append((r.missing_keys, r.unexpected_keys))
    return out


def test_extra_state_matches_torch(torch):
    assert _extra_state(tl) == _extra_state(torch)


def test_every_nn_module_class_is_at_torchs_path(torch):
    """Each Module subclass tensorlab.nn exports that torch.nn has too is importable from
    tensorlab.nn.modules.<torch's submodule> (one line in that file; see nn/modules/__init__.py)."""
    import importlib
    missing = []
    for name in dir(nn):
        cls = getattr(nn, name)
        theirs = getattr(torch.nn, name, None)
        if not (isinstance(cls, type) and issubclass(cls, nn.Module) and isinstance(theirs, type)):
            continue
        sub = theirs.__module__.removeprefix("torch.nn.modules.")
        # classes outside torch.nn.modules (nn.parallel's DataParallel) sit at tensorlab's same path
        path = f"tensorlab.nn.modules.{sub}" if sub != theirs.__module__ else "tensorlab" + sub.removeprefix("torch")
        try:
            ok = getattr(importlib.import_module(path), name, None) is cls
        except ImportError:
            ok = False
        if not ok:
            missing.append(f"tensorlab/nn/modules/{sub}.py: from ..{cls.__module__.rpartition('.')[2]} import {name}")
    assert not missing, "add these mirror lines:\n" + "\n".join(missing)


def test_to_memory_format_matches_torch(torch, device):
    def build(lib, **kw):
        m = lib.nn.Module()
        m.w4 = lib.nn.Parameter(lib.ones(2, 3, 4, 5, **kw))
        m.w2 = lib.nn.Parameter(lib.ones(3, 4, **kw))
        m.register_buffer("b4", lib.zeros(1, 2, 3, 4, **kw))
        return m
    ours, theirs = build(tl, device=device), build(torch)
    ours.to(memory_format=tl.channels_last)
    theirs.to(memory_format=torch.channels_last)
    for name in ("w4", "w2", "b4"):
        assert tuple(getattr(ours, name).stride()) == tuple(getattr(theirs, name).stride()), name
    assert isinstance(ours.w4, nn.Parameter)
    ours.to(device, tl.float64, memory_format=tl.contiguous_format)
    assert ours.w4.is_contiguous() and ours.w4.dtype == tl.float64 and ours.b4.dtype == tl.float64
