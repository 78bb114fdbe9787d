"""The torch-internal names library code (torchvision and others) imports, against torch where it has an
answer: torch.utils._pytree (flatten/unflatten/TreeSpec/tree_map), torch.nn.modules.utils, torch.types,
torch.jit.annotations / _script_if_tracing / _overload_method, torch.fx.wrap, torch.ao.quantization's
stubs, torch._dynamo.utils.is_compile_supported, torch.utils.model_zoo / hub.tqdm."""
from __future__ import annotations

import collections
import io

import pytest

import tensorlab as tl
from tensorlab.utils import _pytree as pytree

Point = collections.namedtuple("Point", "x y")
TREES = [None, 1, (1, [2, {"b": 3, "a": 4}], None), collections.OrderedDict(a=1, b=(2, 3)), {"x": (1, 2)},
         [], (), {}, [Point(1, [2, 3])], collections.deque([1, 2], maxlen=5),
         collections.defaultdict(list, {"k": [1, 2]})]


@pytest.mark.torch_oracle
@pytest.mark.parametrize("i", range(len(TREES)))
def test_pytree_agrees_with_torch(torch, i):
    import torch.utils._pytree as theirs
    tree = TREES[i]
    leaves, spec = pytree.tree_flatten(tree)
    tleaves, tspec = theirs.tree_flatten(tree)
    assert leaves == tleaves and repr(spec) == repr(tspec)
    assert spec.num_leaves == tspec.num_leaves and spec.num_nodes == tspec.num_nodes
    back = pytree.tree_unflatten(leaves, spec)
    assert back == tree and type(back) is type(tree)
    doubled = pytree.tree_map(lambda v: v * 2 if isinstance(v, int) else v, tree)
    assert doubled == theirs.tree_map(lambda v: v * 2 if isinstance(v, int) else v, tree)
    assert pytree.tree_leaves(tree) == theirs.tree_leaves(tree)


def test_pytree_errors_registration_and_multi_tree_map():
    leaves, spec = pytree.tree_flatten([1, (2, 3)])
    with pytest.raises(ValueError, match="has length 2 but the spec refers to a pytree that holds 3"):
        pytree.tree_unflatten([1, 2], spec)
    assert pytree.tree_map(lambda a, b: a + b, [1, (2, 3)], [10, (20, 30)]) == [11, (22, 33)]
    with pytest.raises(ValueError, match="different structures"):
        pytree.tree_map(lambda a, b: a, [1, 2], [1, (2,)])

    class Box:
        def __init__(self, a, b):
            self.a, self.b = a, b

    pytree.register_pytree_node(Box, lambda bx: ([bx.a, bx.b], "box"), lambda items, ctx: Box(*items))
    try:
        leaves, spec = pytree.tree_flatten({"k": Box(1, [2])})
        assert leaves == [1, 2] and spec.children_specs[0].context == "box"
        rebuilt = pytree.tree_unflatten([5, 6], spec)
        assert rebuilt["k"].a == 5 and rebuilt["k"].b == [6]
        with pytest.raises(ValueError, match="already registered"):
            pytree.register_pytree_node(Box, lambda bx: ([], None), lambda items, ctx: Box(0, 0))
    finally:
        del pytree.SUPPORTED_NODES[Box]
    t = tl.ones(2)
    assert pytree.tree_map_only(tl.Tensor, lambda x: x * 3, {"t": t, "n": 1})["t"].tolist() == [3, 3]


@pytest.mark.torch_oracle
def test_nn_modules_utils_agree_with_torch(torch):
    from torch.nn.modules import utils as theirs

    from tensorlab.nn.modules import utils as ours
    for name in ("_single", "_pair", "_triple", "_quadruple"):
        for v in (3, (1, 2), [4, 5, 6]):
            assert getattr(ours, name)(v) == getattr(theirs, name)(v)
    assert ours._reverse_repeat_tuple((1, 2, 3), 2) == theirs._reverse_repeat_tuple((1, 2, 3), 2)
    assert ours._list_with_default([None, 4], [1, 2, 7, 8]) == theirs._list_with_default([None, 4], [1, 2, 7, 8])
    sd = collections.OrderedDict([("module.a", 1), ("module.b.c", 2), ("other", 3)])
    sd._metadata = collections.OrderedDict([("", {}), ("module", {"v": 1}), ("module.b", {"v": 2})])
    tsd = collections.OrderedDict(sd)
    tsd._metadata = collections.OrderedDict(sd._metadata)
    ours.consume_prefix_in_state_dict_if_present(sd, "module.")
    theirs.consume_prefix_in_state_dict_if_present(tsd, "module.")
    assert list(sd.items()) == list(tsd.items()) and dict(sd._metadata) == dict(tsd._metadata)


def test_jit_fx_ao_types_dynamo_names():
    from tensorlab import fx, types
    from tensorlab._dynamo.utils import is_compile_supported
    from tensorlab.ao.quantization import DeQuantStub, QuantStub
    from tensorlab.jit.annotations import BroadcastingList2

    def f(x):
        return x + 1
    assert tl.jit._script_if_tracing(f) is f and tl.jit._overload_method(f) is f
    assert BroadcastingList2[int] == (int | list[int]) or "int" in repr(BroadcastingList2[int])
    assert fx.wrap("f") == "f" and fx.wrap(f) is f and (__name__, "f") in fx.wrapped()
    with pytest.raises(RuntimeError, match="Unsupported type"):
        fx.wrap(3)
    m = tl.nn.Sequential(QuantStub(), tl.nn.Linear(2, 2), DeQuantStub())
    x = tl.ones(1, 2)
    assert tl.equal(m(x), m[1](x))
    assert types.Device is not None and isinstance(tl.device("cpu"), types._device)
    assert is_compile_supported("cpu") and is_compile_supported("cuda") and not is_compile_supported("mps")


def test_model_zoo_and_hub_tqdm():
    from tensorlab.hub import tqdm
    from tensorlab.utils import model_zoo
    assert model_zoo.load_url is tl.hub.load_state_dict_from_url
    out = io.StringIO()
    with tqdm(total=4, file=out) as bar:
        bar.update(1)
        bar.update(3)
    assert bar.n == 4
    if type(tqdm).__module__ == "tensorlab.hub" or tqdm.__module__ == "tensorlab.hub":
        assert "100.0%" in out.getvalue()
