"""The torch-level names torch scripts use beyond tensors: legacy typed constructors (tl.FloatTensor,
...), tl.compile, tl.accelerator, deterministic-algorithm and matmul-precision settings, compared
with torch where torch answers on this machine."""
from __future__ import annotations

import operator
import warnings

import numpy as np
import pytest

import tensorlab as tl

LEGACY = ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor", "CharTensor", "ShortTensor",
          "IntTensor", "LongTensor", "BoolTensor"]


@pytest.mark.parametrize("name", LEGACY)
def test_legacy_constructors_match_torch(torch, name):
    ours, theirs = getattr(tl, name), getattr(torch, name)
    data = [1, 0, 3] if name != "BoolTensor" else [True, False, True]
    a, b = ours(data), theirs(data)
    assert str(a.dtype).split(".")[1] == str(b.dtype).split(".")[1]
    np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())
    assert ours.dtype == a.dtype
    assert tuple(ours(2, 3).shape) == tuple(theirs(2, 3).shape) == (2, 3)
    assert tuple(ours(tl.Size([4])).shape) == (4,)
    assert tuple(ours().shape) == tuple(theirs().shape) == (0,)
    assert isinstance(a, ours) and not isinstance(a.double() if name != "DoubleTensor" else a.float(), ours)
    assert repr(ours) == f"<class 'tensorlab.{name}'>"


def test_legacy_constructor_rules(torch, device):
    np.testing.assert_array_equal(tl.LongTensor([1.5, -2.7]).numpy(), torch.LongTensor([1.5, -2.7]).numpy())
    t = tl.ones(2)
    alias = tl.FloatTensor(t)
    assert alias.untyped_storage() is t.untyped_storage()
    with pytest.raises(TypeError, match="FloatTensor"):
        tl.FloatTensor(tl.ones(2, dtype=tl.int64))
    with pytest.raises(TypeError, match="sizes must be ints"):
        tl.FloatTensor(2, 3.0)
    with pytest.raises(RuntimeError, match="legacy constructor expects device type: cpu but device type: cuda"):
        tl.FloatTensor([1.0], device="cuda")
    assert not isinstance(tl.ones(2, device=device), tl.FloatTensor) or device == "cpu"
    assert tuple(tl.FloatTensor(3, device="cpu").shape) == (3,)


def test_tensor_type_with_legacy_names_matches_torch(torch, device):
    x, tx = tl.tensor([1.5, -2.0], device=device), torch.tensor([1.5, -2.0])
    for target in ("LongTensor", "DoubleTensor", "FloatTensor", "ByteTensor"):
        for ours, theirs in ((getattr(tl, target), getattr(torch, target)), (f"torch.{target}", f"torch.{target}"),
                             (f"tensorlab.{target}", f"torch.{target}")):
            r, tr = x.type(ours), tx.type(theirs)
            assert r.device.type == "cpu" and str(r.dtype).split(".")[1] == str(tr.dtype).split(".")[1]
            np.testing.assert_array_equal(r.numpy(), tr.numpy())
    same = tl.ones(2)
    assert same.type("torch.FloatTensor") is same and same.type(tl.FloatTensor) is same
    if device == "cuda":
        moved = tl.ones(2).type("torch.cuda.LongTensor")
        assert moved.device.type == "cuda" and moved.dtype == tl.int64
    for bad in ("foo", "torch.Foo", "numpy.LongTensor"):
        with pytest.raises(ValueError, match=f"invalid type: '{bad}'"):
            x.type(bad)


def test_compile_is_eager_and_refuses_other_backends(device):
    import tensorlab._compile as C
    C._noted = False
    model = tl.nn.Linear(2, 2, device=device)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert tl.compile(model) is model
        assert tl.compile(model, backend="eager", fullgraph=True, dynamic=False) is model
    notes = [x for x in w if "tensorlab runs eagerly" in str(x.message)]
    assert len(notes) == 1 and notes[0].filename == __file__  # once, attributed to the caller

    @tl.compile
    def f(x):
        return x * 2
    assert f(tl.ones(1, device=device)).item() == 2.0
    assert tl.compile(backend="eager")(f) is f
    for backend in ("inductor", "cudagraphs", "aot_eager"):
        with pytest.raises(RuntimeError, match=f"backend '{backend}' is not available: tensorlab runs every op "
                                               f"eagerly"):
            tl.compile(model, backend=backend)
    assert model.compile() is None and model.compile(backend="eager") is None
    with pytest.raises(RuntimeError, match="backend 'inductor' is not available"):
        model.compile(backend="inductor")
    with pytest.raises(RuntimeError, match="Either mode or options can be specified"):
        tl.compile(model, mode="max-autotune", options={})
    with pytest.raises(RuntimeError, match="expected a callable"):
        tl.compile(3)


def test_accelerator_without_a_device():
    from tensorlab.cuda._devices import _usable
    if _usable():
        pytest.skip("a CUDA device (real or emulated) is present")
    assert tl.accelerator.current_accelerator() is None
    assert tl.accelerator.is_available() is False and tl.accelerator.device_count() == 0
    for fn in (tl.accelerator.current_device_index, tl.accelerator.synchronize, tl.accelerator.empty_cache,
               tl.accelerator.memory_allocated):
        with pytest.raises(RuntimeError, match="Cannot access accelerator device when none is available."):
            fn()


def test_accelerator_matches_torch_without_a_device(torch):
    from tensorlab.cuda._devices import _usable
    if _usable() or torch.accelerator.current_accelerator() is not None:
        pytest.skip("compares the no-accelerator answers")
    assert tl.accelerator.is_available() == torch.accelerator.is_available()
    assert tl.accelerator.device_count() == torch.accelerator.device_count()
    for ours, theirs in ((tl.accelerator.current_device_index, torch.accelerator.current_device_index),
                         (tl.accelerator.synchronize, torch.accelerator.synchronize)):
        with pytest.raises(RuntimeError) as a:
            ours()
        with pytest.raises(RuntimeError) as b:
            theirs()
        assert str(a.value) == str(b.value)


def test_accelerator_over_cuda(cuda):
    acc = tl.accelerator.current_accelerator()
    assert acc == tl.device("cuda") and acc.type == "cuda"
    assert tl.accelerator.device_count() == tl.cuda.device_count() >= 1
    assert tl.accelerator.current_device_index() == tl.cuda.current_device()
    x = tl.ones(1000, device=cuda)
    before = tl.accelerator.memory_allocated()
    assert before == tl.cuda.memory_allocated() and before >= x.numel() * 4
    tl.accelerator.synchronize()
    tl.accelerator.synchronize("cuda:0")
    tl.accelerator.synchronize(0)
    with tl.accelerator.device_index(0):
        assert tl.accelerator.current_device_index() == 0
    with pytest.raises(ValueError, match="cpu doesn't match the current accelerator cuda"):
        tl.accelerator.synchronize("cpu")
    with pytest.raises(ValueError, match="Expected a torch.device with a specified index or an integer"):
        tl.accelerator.set_device_index("cuda")
    cap = tl.accelerator.get_device_capability()
    assert (cap["major"], cap["minor"]) == tuple(tl.cuda.get_device_capability())
    assert tl.accelerator.current_accelerator(check_available=True) == (
        tl.device("cuda") if tl.cuda.is_available() else None)


def test_deterministic_flags_match_torch(torch):
    try:
        for mode, warn_only in ((True, False), (True, True), (False, False)):
            tl.use_deterministic_algorithms(mode, warn_only=warn_only)
            torch.use_deterministic_algorithms(mode, warn_only=warn_only)
            assert tl.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
            assert tl.is_deterministic_algorithms_warn_only_enabled() == \
                torch.is_deterministic_algorithms_warn_only_enabled()
        with pytest.raises(TypeError) as a:
            tl.use_deterministic_algorithms("yes")
        with pytest.raises(TypeError) as b:
            torch.use_deterministic_algorithms("yes")
        assert str(a.value) == str(b.value)
    finally:
        tl.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)


def test_deterministic_mode_refuses_cuda_float_accumulation(cuda):
    x = tl.zeros(4, device=cuda)
    idx = tl.tensor([0, 0, 1], device=cuda)
    try:
        tl.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError, match="does not have a deterministic implementation, but you set "
                                               "'torch.use_deterministic_algorithms\\(True\\)'"):
            x.index_put_((idx,), tl.ones(3, device=cuda), accumulate=True)
        assert x.tolist() == [0.0] * 4  # refused before anything was written
        x.index_put_((idx,), tl.ones(3, device=cuda))  # plain writes are deterministic
        xi = tl.zeros(4, dtype=tl.int64, device=cuda)
        xi.index_put_((idx,), tl.ones(3, dtype=tl.int64, device=cuda), accumulate=True)  # integer sums are exact
        assert xi.tolist() == [2, 1, 0, 0]
        tl.use_deterministic_algorithms(True, warn_only=True)
        with pytest.warns(UserWarning, match="does not have a deterministic implementation"):
            x.index_put_((idx,), tl.ones(3, device=cuda), accumulate=True)
        assert x.tolist() == [3.0, 2.0, 0.0, 0.0]
        tl.use_deterministic_algorithms(True)
        y = tl.zeros(3, device=cuda)
        with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
            y.scatter_add_(0, tl.tensor([0, 0], device=cuda), tl.ones(2, device=cuda))
        with pytest.raises(RuntimeError, match="does not have a deterministic implementation"):
            y.scatter_(0, tl.tensor([1, 1], device=cuda), tl.ones(2, device=cuda), reduce="multiply")
        assert y.tolist() == [0.0, 0.0, 0.0]
        y.scatter_(0, tl.tensor([2], device=cuda), tl.ones(1, device=cuda))  # plain scatter is allowed
        assert y.tolist() == [0.0, 0.0, 1.0]
    finally:
        tl.use_deterministic_algorithms(False)


def test_cpu_accumulation_is_deterministic_and_allowed():
    try:
        tl.use_deterministic_algorithms(True)
        x = tl.zeros(3).index_put_((tl.tensor([0, 0, 2]),), tl.ones(3), accumulate=True)
        assert x.tolist() == [2.0, 0.0, 1.0]
    finally:
        tl.use_deterministic_algorithms(False)


def test_float32_matmul_precision_matches_torch(torch):
    before = torch.get_float32_matmul_precision()
    try:
        for p in ("high", "medium", "highest"):
            tl.set_float32_matmul_precision(p)
            torch.set_float32_matmul_precision(p)
            assert tl.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == p
        with pytest.warns(UserWarning, match="foo is not one of 'highest', 'high', or 'medium'"):
            tl.set_float32_matmul_precision("foo")
        assert tl.get_float32_matmul_precision() == "highest"
        for bad in (1, tl.ones(1)):
            with pytest.raises(RuntimeError, match="set_float32_matmul_precision expects a str, but got"):
                tl.set_float32_matmul_precision(bad)
        with pytest.raises(RuntimeError) as a:
            tl.set_float32_matmul_precision(1)
        with pytest.raises(RuntimeError) as b:
            torch.set_float32_matmul_precision(1)
        assert str(a.value) == str(b.value)
    finally:
        torch.set_float32_matmul_precision(before)
        tl.set_float32_matmul_precision("highest")


def test_math_constants_match_torch(torch):
    for name in ("e", "inf", "pi"):
        assert getattr(tl, name) == getattr(torch, name) and type(getattr(tl, name)) is float
    assert tl.nan != tl.nan and type(tl.nan) is float


def test_torch_version_compares_as_torchs(torch):
    from tensorlab.compat.version import TorchVersion, __version__
    theirs = torch.__version__
    ours = TorchVersion(str(theirs))
    for other in ("2.9", "2.13", "2.13.0", "2.13.1", "2.13.0a0", "2.14.0.dev0", "10.0", str(theirs), (2, 0), (2, 13),
                  (2, 13, 0), (2, 13, 1), (3,)):
        for op in (operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne):
            assert op(ours, other) == op(theirs, other), (other, op)
    with pytest.raises(TypeError):
        ours > 3
    assert __version__.startswith("2.13.0+tensorlab") and __version__ > "2.12.9" and isinstance(__version__, str)


def test_alias_reports_missing_modules_but_not_broken_ones(monkeypatch):
    from tensorlab.compat import _alias
    assert _alias._find("tensorlab.nn.functional") is not None
    assert _alias._find("tensorlab.utils.mobile_optimizer") is None and _alias._find("tensorlab.utils_nope.data") is None
    assert _alias._tensorlab_name("torch.backends.cudnn") == "tensorlab.compat.backends.cudnn"
    assert _alias._tensorlab_name("torch.sync") is None and _alias._tensorlab_name("torch.nn") == "tensorlab.nn"
    assert _alias._tensorlab_name("torch.ops") == "tensorlab.op_namespaces"  # tensorlab.ops: the op front ends
    assert _alias._torch_name("tensorlab.compat.version") == "torch.version"

    def broken(name):  # a tensorlab module whose own import fails on a missing dependency
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")
    monkeypatch.setattr(_alias.importlib.util, "find_spec", broken)
    with pytest.raises(ModuleNotFoundError, match="scipy"):
        _alias._find("tensorlab.nn.functional")
