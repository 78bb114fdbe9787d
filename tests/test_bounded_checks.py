"""Bounded checks and nn bad input (issue 38, items 6 and 8): the internal-overlap check decides
from sizes and strides with bounded work; every loop or allocation sized by a user argument
(interpolate, adaptive pooling, mode padding) is checked against the machine before it starts;
an inf/NaN input reaches only the outputs that read it; wrong argument types get torch's
exception classes; scaled_dot_product_attention and linear give torch's shapes for 0-size and
1-D cases; a negative shape through __cuda_array_interface__ is refused."""
import itertools
import random
import time
import warnings

import numpy as np
import pytest

import tensorlab as tl
from tensorlab import layout as L

F = tl.nn.functional


# -- the overlap check ----------------------------------------------------------------------------
def test_overlap_check_is_exact_on_small_layouts():
    rng = random.Random(0)
    for _ in range(3000):
        d = rng.randint(1, 4)
        shape = tuple(rng.randint(1, 5) for _ in range(d))
        stride = tuple(rng.randint(0, 12) for _ in range(d))
        offs = [sum(i * s for i, s in zip(idx, stride)) for idx in itertools.product(*[range(n) for n in shape])]
        assert L.has_internal_overlap(shape, stride) == (len(set(offs)) != len(offs)), (shape, stride)


def test_add_on_a_huge_self_overlapping_view_is_refused_at_once():
    base = tl.zeros(60000)  # 240 KB
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match="add_: unsupported operation"):
        base.as_strided((30000, 30000), (1, 1)).add_(1)
    assert time.perf_counter() - t0 < 2.0
    assert not base.any()


def test_too_hard_layouts_answer_at_once():
    t0 = time.perf_counter()
    # 10**6 elements at offsets i*999 + j*1000: distinct, and no cheap rule proves it (torch: TooHard)
    assert L.has_internal_overlap((1000, 1000), (999, 1000)) is False
    assert L.has_internal_overlap((3000, 3000, 7), (2999, 3001, 1)) in (True, False)
    assert time.perf_counter() - t0 < 2.0


# -- user-sized loops and allocations ------------------------------------------------------------
HUGE = [
    ("interpolate nearest 2**40", lambda lib, x: lib.nn.functional.interpolate(x, size=2 ** 40)),
    ("interpolate linear 2**40", lambda lib, x: lib.nn.functional.interpolate(x, size=2 ** 40, mode="linear")),
    ("conv1d replicate padding 2**31",
     lambda lib, x: lib.nn.Conv1d(2, 2, 3, padding=2 ** 31, padding_mode="replicate")(x)),
    ("adaptive_avg_pool1d 2**40", lambda lib, x: lib.nn.functional.adaptive_avg_pool1d(x, 2 ** 40)),
    ("adaptive_max_pool1d 2**40", lambda lib, x: lib.nn.functional.adaptive_max_pool1d(x, 2 ** 40)),
    ("adaptive_avg_pool2d overflow",
     lambda lib, x: lib.nn.functional.adaptive_avg_pool2d(x.unsqueeze(-1), (2 ** 30, 2 ** 30))),
]


@pytest.mark.parametrize("case", range(len(HUGE)), ids=[h[0] for h in HUGE])
def test_sizes_beyond_the_machine_are_refused_before_any_work(case, torch):
    _, fn = HUGE[case]
    classes = []
    for lib in (tl, torch):
        x = lib.ones(1, 2, 8)
        t0 = time.perf_counter()
        with pytest.raises(Exception) as info:
            fn(lib, x)
        assert time.perf_counter() - t0 < 5.0
        classes.append(type(info.value))
    assert issubclass(classes[0], RuntimeError) and issubclass(classes[1], RuntimeError)


def test_large_but_possible_interpolation_is_linear_time(torch):
    x = tl.tensor(np.random.default_rng(0).standard_normal((1, 1, 8)).astype(np.float32))
    t0 = time.perf_counter()
    y = F.interpolate(x, size=10 ** 6, mode="linear")
    assert time.perf_counter() - t0 < 20.0
    ref = torch.nn.functional.interpolate(torch.tensor(x.numpy()), size=10 ** 6, mode="linear")
    np.testing.assert_allclose(y.numpy(), ref.numpy(), rtol=1e-5, atol=1e-6)


# -- an inf/NaN reaches only its own outputs -------------------------------------------------------
NAN_CASES = [
    ("linear", lambda f, x: f.interpolate(x, size=13, mode="linear")),
    ("linear ac", lambda f, x: f.interpolate(x, size=5, mode="linear", align_corners=True)),
    ("bilinear", lambda f, x: f.interpolate(x.unsqueeze(2).expand(1, 2, 3, 9), size=(4, 14), mode="bilinear")),
    ("bicubic", lambda f, x: f.interpolate(x.unsqueeze(2).expand(1, 2, 3, 9), size=(5, 17), mode="bicubic")),
    ("area", lambda f, x: f.interpolate(x, size=4, mode="area")),
    ("adaptive_avg_pool1d up", lambda f, x: f.adaptive_avg_pool1d(x, 13)),
    ("adaptive_avg_pool1d down", lambda f, x: f.adaptive_avg_pool1d(x, 4)),
    ("adaptive_avg_pool2d", lambda f, x: f.adaptive_avg_pool2d(x.unsqueeze(2).expand(1, 2, 5, 9), (3, 4))),
]


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
@pytest.mark.parametrize("case", range(len(NAN_CASES)), ids=[c[0] for c in NAN_CASES])
def test_non_finite_inputs_stay_local_as_in_torch(case, bad, device, torch):
    x = np.random.default_rng(1).standard_normal((1, 2, 9)).astype(np.float32)
    x[0, 0, 4] = bad
    _, fn = NAN_CASES[case]
    got = fn(F, tl.tensor(x, device=device)).cpu().numpy()
    want = fn(torch.nn.functional, torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, equal_nan=True)
    assert np.isfinite(got[0, 1]).all()  # the other channel never saw it


# -- wrong argument types ------------------------------------------------------------------------
FUNCS = ["relu", "relu6", "silu", "mish", "elu", "hardtanh", "dropout", "instance_norm", "poisson_nll_loss",
         "hinge_embedding_loss", "multi_margin_loss", "multilabel_margin_loss", "soft_margin_loss", "linear",
         "interpolate", "adaptive_avg_pool1d", "scaled_dot_product_attention"]
BAD = ["str", None, 3, 2.5, [1, 2], (1,), {"a": 1}]


@pytest.mark.parametrize("name", FUNCS)
def test_wrong_argument_types_raise_torchs_class(name, torch):
    warnings.simplefilter("ignore")
    mism = []
    for first, second in itertools.product(["t3", "t2"] + BAD, [None] + BAD):
        if first in ("t3", "t2") and second is None:
            continue
        out = []
        for lib in (torch, tl):
            a = [lib.ones(2, 3, 4) if x == "t3" else lib.ones(3, 4) if x == "t2" else x
                 for x in ([first] if second is None else [first, second])]
            try:
                getattr(lib.nn.functional, name)(*a)
                out.append("ok")
            except Exception as e:  # noqa: BLE001 - the class is what is compared
                out.append(type(e).__name__)
        assert out[1] in ("ok", "TypeError", "RuntimeError", "ValueError", "NotImplementedError"), \
            (name, first, second, out)
        # a non-tensor input: torch's TypeError (its checks of other arguments may come first)
        if first not in ("t3", "t2") and out[0] == "TypeError" and out[1] != "TypeError":
            mism.append((first, second, out))
    assert not mism, mism


# -- shapes of 0-size and 1-D cases ---------------------------------------------------------------
def _shape_or_class(lib, fn, shapes):
    try:
        return tuple(fn(lib, *[lib.ones(*s) if s is not None else None for s in shapes]).shape)
    except Exception as e:  # noqa: BLE001
        return type(e).__name__


def test_linear_shapes_as_torch(torch):
    lin = lambda lib, x, w, b: lib.nn.functional.linear(x, w, b)  # noqa: E731
    for xs, ws, bs in itertools.product([(3,), (2, 3), (0, 3), (2, 0), (0,), (2, 1, 3)],
                                        [(4, 3), (3,), (0, 3), (4, 0), (0,)], [None, (4,), (), (0,), (1,)]):
        assert _shape_or_class(tl, lin, (xs, ws, bs)) == _shape_or_class(torch, lin, (xs, ws, bs)), (xs, ws, bs)


def test_sdpa_zero_size_shapes_and_values_as_torch(torch):
    sdpa = lambda lib, q, k, v: lib.nn.functional.scaled_dot_product_attention(q, k, v)  # noqa: E731
    for Lq, S, E, Ev in itertools.product([0, 2], [0, 4], [0, 3], [0, 5]):
        for batch in [(), (1,), (2, 0)]:
            shapes = (batch + (Lq, E), batch + (S, E), batch + (S, Ev))
            assert _shape_or_class(tl, sdpa, shapes) == _shape_or_class(torch, sdpa, shapes), shapes
            qkv = [np.random.default_rng(2).standard_normal(s).astype(np.float32) for s in shapes]
            got = sdpa(tl, *[tl.tensor(a) for a in qkv]).numpy()
            want = sdpa(torch, *[torch.tensor(a) for a in qkv]).numpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    for shapes in [((0, 3), (1, 4, 3), (1, 4, 5)), ((2, 3), (1, 4, 3), (1, 4, 0))]:
        assert _shape_or_class(tl, sdpa, shapes) == _shape_or_class(torch, sdpa, shapes), shapes


# -- __cuda_array_interface__ ---------------------------------------------------------------------
class _Iface:
    def __init__(self, shape):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (0, False), "version": 3,
                                         "strides": None}


@pytest.mark.parametrize("shape", [(-1, 4), (2, -3)])
def test_negative_shape_through_cuda_array_interface_is_refused(shape):
    from tensorlab.interop.arrays import from_cuda_array_interface
    with pytest.raises(RuntimeError, match="negative dimension"):
        from_cuda_array_interface(_Iface(shape))
    with pytest.raises(TypeError, match="tuple of ints"):
        from_cuda_array_interface(_Iface((2.5, 3)))
