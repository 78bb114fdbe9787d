"""Each CUDA driver implements every method of the driver interface (driver.Driver) with the same
parameters, so the backend above them runs unchanged on a GPU and on the emulation."""
from __future__ import annotations

import inspect

import pytest

from tensorlab.backends.cuda.cupy_driver import CupyDriver
from tensorlab.backends.cuda.driver import Driver
from tensorlab.backends.cuda.emulation.driver import EmulationDriver

METHODS = sorted(n for n, v in vars(Driver).items() if inspect.isfunction(v) and not n.startswith("_"))


def test_the_interface_is_not_empty():
    assert {"malloc", "free", "launch", "load_module", "memcpy_htod", "event_elapsed_ms"} <= set(METHODS)


@pytest.mark.parametrize("cls", [CupyDriver, EmulationDriver], ids=lambda c: c.__name__)
@pytest.mark.parametrize("method", METHODS)
def test_driver_implements_method(cls, method):
    impl = getattr(cls, method, None)
    assert callable(impl), f"{cls.__name__} lacks {method}()"
    want = list(inspect.signature(getattr(Driver, method)).parameters)
    got = list(inspect.signature(impl).parameters)
    assert got == want, f"{cls.__name__}.{method}{tuple(got)} differs from Driver.{method}{tuple(want)}"


@pytest.mark.parametrize("cls", [CupyDriver, EmulationDriver], ids=lambda c: c.__name__)
def test_driver_has_a_name(cls):
    assert isinstance(cls.name, str) and cls.name


@pytest.mark.parametrize("cls, want", [(CupyDriver, "expression"), (EmulationDriver, "source")],
                         ids=lambda c: getattr(c, "__name__", c))
def test_driver_says_what_one_load_module_compiles(cls, want):
    # modules.py compiles one name expression per module for CuPy (a fast first launch) and a
    # source's whole kernel_table row for the emulation (one g++ build per source)
    assert "module_granularity" in Driver.__annotations__
    assert cls.module_granularity == want
