"""torch.library and torch.ops on tensorlab: Python operators defined by custom_op / Library.define /
define+impl, called directly and as torch.ops.<ns>.<name>(.default), kernels per device, autograd
formulas (against torch running the same definitions, and against finite differences), schema binding
errors, fakes registered before the op exists, C++ libraries refused with OSError; torch.ops.aten
naming tensorlab's functions; the torch._check family and torch._C's dispatch-key guard (autocast
suspended) against torch."""
from __future__ import annotations

import itertools
from typing import List, Optional

import pytest

import tensorlab as tl
from tensorlab import library, op_namespaces as ops

_ids = itertools.count()


def _ns():
    return f"tltest{next(_ids)}"


def test_custom_op_call_schema_and_ops_namespace(device):
    ns = _ns()

    @tl.library.custom_op(f"{ns}::scale", mutates_args=())
    def scale(x: tl.Tensor, k: float, shift: float = 0.0) -> tl.Tensor:
        return x * k + shift

    x = tl.arange(4.0, device=device)
    assert scale(x, 2.0).tolist() == [0, 2, 4, 6]
    assert getattr(ops, ns).scale(x, 2.0, shift=1.0).tolist() == [1, 3, 5, 7]
    assert getattr(ops, ns).scale.default(x, k=3.0).tolist() == [0, 3, 6, 9]
    assert library._REGISTRY[f"{ns}::scale"].schema == "(Tensor x, float k, float shift=0.0) -> Tensor"
    with pytest.raises(TypeError, match="missing required argument 'k'"):
        scale(x)
    with pytest.raises(TypeError, match="unexpected keyword argument 'j'"):
        scale(x, 1.0, j=2)
    with pytest.raises(AttributeError, match=f"torch.ops.{ns}' object has no attribute 'nope'"):
        getattr(ops, ns).nope
    with pytest.raises(RuntimeError, match="same name"):
        tl.library.define(f"{ns}::scale", "(Tensor x) -> Tensor")


def test_kernels_per_device_and_missing_kernel(device):
    ns = _ns()
    lib = tl.library.Library(ns, "DEF")
    assert lib.define("twice(Tensor x) -> Tensor") == "twice"
    lib.impl("twice", lambda x: x * 2, "CPU")
    x = tl.ones(3, device=device)
    if x.device.type == "cpu":
        assert getattr(ops, ns).twice(x).tolist() == [2, 2, 2]
    else:
        with pytest.raises(NotImplementedError, match=f"'{ns}::twice' with arguments from the 'CUDA' backend"):
            getattr(ops, ns).twice(x)
        tl.library.register_kernel(f"{ns}::twice", "cuda", lambda x: x + x)
        assert getattr(ops, ns).twice(x).tolist() == [2, 2, 2]
    frag = tl.library.Library(ns, "FRAGMENT")
    frag.define("neg_(Tensor(a!) x) -> ()")
    tl.library.impl(f"{ns}::neg_", "CompositeExplicitAutograd", lambda x: x.neg_())
    getattr(ops, ns).neg_(x)
    assert x.tolist() == [-1, -1, -1]
    with pytest.raises(RuntimeError, match="Only a single TORCH_LIBRARY"):
        tl.library.Library(ns, "DEF")
    lib._destroy()
    with pytest.raises(AttributeError):
        getattr(ops, ns).twice


@pytest.mark.torch_oracle
def test_register_autograd_matches_torch(device, torch):
    def setup(ctx, inputs, output):
        x, k = inputs
        ctx.save_for_backward(x)
        ctx.k = k

    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ctx.k * 2 * x, None

    def fwd(x, k):
        return (x * x) * k

    results = []
    for lib_mod, T in ((tl, tl), (torch, torch)):
        ns = _ns()
        op = lib_mod.library.custom_op(f"{ns}::sqk", mutates_args=(), schema="(Tensor x, float k) -> Tensor")(
            lambda x, k: fwd(x, k).clone() if lib_mod is torch else fwd(x, k))
        op.register_autograd(backward, setup_context=setup)
        x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        if lib_mod is tl:
            x = tl.tensor([1.0, -2.0, 3.0], device=device, requires_grad=True)
        y = op(x, 1.5)
        y.sum().backward()
        results.append((y.detach().cpu().tolist(), x.grad.cpu().tolist()))
    assert results[0] == results[1]


def test_register_autograd_gradcheck_and_wrong_count():
    ns = _ns()
    tl.library.define(f"{ns}::cube", "(Tensor x) -> Tensor")
    tl.library.impl(f"{ns}::cube", "cpu", lambda x: x * x * x)
    tl.library.register_autograd(f"{ns}::cube", lambda ctx, g: g * 3 * ctx.x ** 2,
                                 setup_context=lambda ctx, inputs, out: setattr(ctx, "x", inputs[0]))
    x = tl.tensor([0.5, -1.25, 2.0], dtype=tl.float64, requires_grad=True)
    assert tl.autograd.gradcheck(lambda t: getattr(ops, ns).cube(t), (x,))
    tl.library.register_autograd(f"{ns}::cube", lambda ctx, g: (g, g))
    with pytest.raises(RuntimeError, match="returned 2 gradients, expected 1"):
        getattr(ops, ns).cube(x).sum().backward()


def test_fake_before_definition_and_errors():
    ns = _ns()

    @tl.library.register_fake(f"{ns}::later")
    def fake(x):
        return x.new_empty(x.shape)

    tl.library.define(f"{ns}::later", "(Tensor x) -> Tensor")
    assert tl.library.fake_impl(f"{ns}::later") is fake
    with pytest.raises(RuntimeError, match="does not exist"):
        tl.library.register_autograd(f"{ns}::missing", lambda ctx, g: g)
    with pytest.raises(ValueError, match="namespace::name"):
        tl.library.define("noseparator", "(Tensor x) -> Tensor")
    with pytest.raises(RuntimeError, match="cannot parse the schema"):
        tl.library.define(f"{ns}::bad", "Tensor x -> Tensor")
    with pytest.raises(OSError, match="built against libtorch"):
        ops.load_library("/some/lib_C.so")


def test_infer_schema_from_hints():
    def f(x: tl.Tensor, w: Optional[tl.Tensor], n: int, sizes: List[int], flag: bool = False) -> tl.Tensor:
        return x
    assert tl.library.infer_schema(f) == \
        "(Tensor x, Tensor? w, SymInt n, SymInt[] sizes, bool flag=False) -> Tensor"
    with pytest.raises(ValueError, match="must have a type annotation"):
        tl.library.infer_schema(lambda x: x)


def test_aten_namespace_names_tensorlab_functions(device):
    x = tl.tensor([[1.0, -2.0], [3.0, 4.0]], device=device)
    assert ops.aten.add.Tensor(x, x).tolist() == [[2, -4], [6, 8]]
    assert ops.aten.relu.default(x).tolist() == [[1, 0], [3, 4]]
    assert ops.aten.sum(x).item() == 6.0
    assert ops.aten.softmax(x, 1).shape == (2, 2)
    assert ops.aten.slice.Tensor(x, 1, 1, 2).tolist() == [[-2], [4]]  # an aten-only operator (compat/aten.py)
    with pytest.raises(AttributeError, match="'torch.ops.aten' object has no attribute 'no_such_op'"):
        ops.aten.no_such_op


@pytest.mark.torch_oracle
def test_check_family_matches_torch(torch):
    for name, exc in (("_check", RuntimeError), ("_check_index", IndexError), ("_check_value", ValueError),
                      ("_check_type", TypeError), ("_check_not_implemented", NotImplementedError)):
        for msg in (None, lambda: "why"):
            errors = []
            for lib in (tl, torch):
                with pytest.raises(exc) as info:
                    getattr(lib, name)(False, msg)
                errors.append(str(info.value))
                getattr(lib, name)(True, msg)
            assert errors[0] == errors[1]
    with pytest.raises(AssertionError, match="boom"):
        tl._assert(False, "boom")
    with pytest.raises(TypeError, match="message must be a callable"):
        tl._check(False, "a string")


def test_exclude_dispatch_key_guard_suspends_autocast():
    from tensorlab import _C
    keys = _C.DispatchKeySet(_C.DispatchKey.AutocastCPU) | _C.DispatchKeySet(_C.DispatchKey.AutocastCUDA)
    assert keys.has(_C.DispatchKey.AutocastCPU) and not keys.has(_C.DispatchKey.CPU)
    a = tl.ones(4, 4)
    with tl.autocast("cpu", dtype=tl.bfloat16):
        assert (a @ a).dtype is tl.bfloat16
        with _C._ExcludeDispatchKeyGuard(keys):
            assert (a @ a).dtype is tl.float32
        with _C._ExcludeDispatchKeyGuard(_C.DispatchKeySet(_C.DispatchKey.CPU)):
            assert (a @ a).dtype is tl.bfloat16
        assert (a @ a).dtype is tl.bfloat16
    _C._log_api_usage_once("tests.library")
    assert _C.api_usage()["tests.library"] >= 1 and _C._get_tracing_state() is None
