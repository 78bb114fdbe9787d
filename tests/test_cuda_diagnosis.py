"""Why CUDA cannot be used, told apart case by case (tensorlab/backends/diagnosis.py).

The CUDA runtime's answers are simulated by replacing the CuPy calls the diagnosis makes
(getDeviceCount, driverGetVersion, runtimeGetVersion) with CuPy's own CUDARuntimeError carrying
the real cudaError_t codes, and the driver library by a name the loader does or does not find.
The last tests check the real answer on this machine and every place that reports "no CUDA"."""
from __future__ import annotations

import builtins
import ctypes.util
import os
import sys

import pytest

import tensorlab as tl
from tensorlab import backends
from tensorlab.backends import diagnosis

ABSENT_LIB = "libtensorlab-test-no-such-driver.so.1"
PRESENT_LIB = ctypes.util.find_library("c") or "libc.so.6"  # any library the loader finds stands in for libcuda


def _libcuda_loads():
    try:
        ctypes.CDLL(diagnosis.LIBCUDA)
    except OSError:
        return False
    return True


@pytest.fixture
def hidden_backend(monkeypatch):
    """The CUDA backend as on a machine that never loaded it, emulation off (as a user's machine)."""
    monkeypatch.setattr(backends, "_cuda", None)
    monkeypatch.setattr(backends, "cuda_emulated", lambda: False)
    monkeypatch.delenv("TENSORLAB_CUDA_EMULATION", raising=False)


@pytest.fixture
def simulate(monkeypatch, hidden_backend):
    """simulate(status=35, driver=0, runtime=12090, libcuda=False, count=None, visible=None): the runtime's
    answers. status: the cudaError_t getDeviceCount raises (None: it returns count)."""
    rt = pytest.importorskip("cupy").cuda.runtime

    def apply(status=None, *, driver=0, runtime=12090, libcuda=True, count=1, visible=None, error=None):
        def get_device_count():
            if error is not None:
                raise error
            if status is not None:
                raise rt.CUDARuntimeError(status)
            return count
        monkeypatch.setattr(rt, "getDeviceCount", get_device_count)
        monkeypatch.setattr(rt, "driverGetVersion", lambda: driver)
        monkeypatch.setattr(rt, "runtimeGetVersion", lambda: runtime)
        monkeypatch.setattr(diagnosis, "LIBCUDA", PRESENT_LIB if libcuda else ABSENT_LIB)
        if visible is None:
            monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        else:
            monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
        return diagnosis.diagnose()
    return apply


def _reported_everywhere(d):
    """Every user-facing "no CUDA" report carries the diagnosis, and nothing raises where it must not."""
    assert d is not None and "\n" not in str(d)
    assert backends.cuda_unavailable_reason() == str(d)
    assert tl.cuda.is_available() is False and tl.cuda.device_count() == 0
    for call in (lambda: tl.ones(2).to("cuda"), lambda: tl.ones(2).pin_memory(), lambda: tl.zeros(2, device="cuda")):
        with pytest.raises(RuntimeError) as e:
            call()
        assert str(e.value) == f"CUDA was asked for but is not available: {d}"


# -- (a) no driver library --------------------------------------------------------------------------
def test_no_driver_library(simulate):
    # what cudart answers without libcuda.so.1: insufficient driver, driver version 0
    d = simulate(35, driver=0, libcuda=False)
    assert d.case == "no_driver"
    assert d.what.startswith("no NVIDIA driver on this machine (") and ABSENT_LIB in d.what
    assert "nvidia-smi" in d.action and "device='cpu'" in d.action
    assert "insufficient" not in str(d) and "extra" not in str(d)
    _reported_everywhere(d)


def test_driver_library_that_reports_no_version_is_no_driver(simulate):
    d = simulate(35, driver=0, libcuda=True)
    assert d.case == "no_driver" and "reports no CUDA version" in d.what


def test_toolkit_stub_instead_of_a_driver(simulate):
    d = simulate(34, driver=0)
    assert d.case == "stub_driver" and "stub" in d.what and "LD_LIBRARY_PATH" in d.action
    _reported_everywhere(d)


# -- (b) a driver, no visible device ----------------------------------------------------------------
def test_driver_but_no_device(simulate):
    d = simulate(100, driver=12040)
    assert d.case == "no_device"
    assert "NVIDIA driver (CUDA 12.4) is installed" in d.what and "cudaErrorNoDevice (code 100)" in d.what
    assert "docker run --gpus all" in d.action and "nvidia-smi -L" in d.action
    _reported_everywhere(d)


def test_a_device_count_of_zero_is_no_device(simulate):
    d = simulate(None, count=0, driver=13000)
    assert d.case == "no_device" and "CUDA 13.0" in d.what


@pytest.mark.parametrize("visible, status", [("", 100), ("7", 100), ("GPU-bogus", 100), ("3", 101)])
def test_cuda_visible_devices_hides_every_gpu(simulate, visible, status):
    d = simulate(status, driver=12080, visible=visible)
    assert d.case == "hidden"
    assert d.what.startswith(f"CUDA_VISIBLE_DEVICES={visible!r} leaves this process no GPU")
    assert "unset CUDA_VISIBLE_DEVICES" in d.action
    _reported_everywhere(d)


# -- (c) a driver older than the wheel's CUDA -------------------------------------------------------
def test_cuda12_driver_with_the_cuda13_wheel_names_the_cuda12_extra(simulate):
    d = simulate(35, driver=12020, runtime=13000)
    assert d.case == "old_driver_other_extra"
    assert d.what == "the NVIDIA driver supports CUDA 12.2 but the installed CuPy wheel (cupy-cuda13x) needs CUDA 13.0"
    assert "pip uninstall cupy-cuda13x" in d.action and f"pip install '{diagnosis.DIST}[cuda12]'" in d.action
    assert "R580" in d.action  # the driver that would run the installed wheel
    _reported_everywhere(d)


def test_driver_too_old_for_any_extra_says_upgrade(simulate):
    d = simulate(35, driver=11080, runtime=12090)
    assert d.case == "old_driver_upgrade"
    assert "supports CUDA 11.8" in d.what and "(cupy-cuda12x) needs CUDA 12.9" in d.what
    assert d.action.startswith("upgrade the NVIDIA driver to one for CUDA 12.9 (R525 or newer)")
    assert "cuda11" not in str(d)
    _reported_everywhere(d)


def test_same_major_driver_too_old_says_upgrade_without_a_wrong_driver_branch(simulate):
    d = simulate(35, driver=12000, runtime=12090)
    assert d.case == "old_driver_upgrade" and "supports CUDA 12.0" in d.what and "R525" not in d.action
    assert "the newest your GPU supports" in d.action


def test_insufficient_driver_from_a_new_enough_driver_is_passed_through(simulate):
    d = simulate(35, driver=13000, runtime=12090)
    assert d.case == "cuda_error" and d.what.startswith("CUDA reported cudaErrorInsufficientDriver (code 35): ")


# -- (d) busy, and everything else passed through ---------------------------------------------------
def test_busy_or_unavailable_device(simulate):
    d = simulate(46, driver=12040)
    assert d.case == "busy" and "busy or unavailable" in d.what and "cudaErrorDevicesUnavailable" in d.what
    assert "exclusive-process" in d.action and "nvidia-smi" in d.action
    _reported_everywhere(d)


def test_driver_and_kernel_module_mismatch(simulate):
    d = simulate(803, driver=12040)
    assert d.case == "driver_mismatch" and "reboot" in d.action


@pytest.mark.parametrize("status, name", [(999, "cudaErrorUnknown"), (3, "cudaErrorInitializationError")])
def test_other_cuda_errors_pass_through_with_their_name(simulate, status, name):
    d = simulate(status, driver=12040)
    assert d.case == "cuda_error" and d.what.startswith(f"CUDA reported {name} (code {status}): ")
    _reported_everywhere(d)


def test_a_non_cuda_exception_is_passed_through_too(simulate):
    d = simulate(error=OSError("libcudart.so.12: cannot open shared object file"))
    assert d.case == "cuda_error" and "OSError: libcudart.so.12: cannot open shared object file" in d.what


def test_the_diagnosis_never_raises_even_when_its_own_queries_fail(simulate, monkeypatch):
    rt = sys.modules["cupy"].cuda.runtime

    def boom():
        raise RuntimeError("driverGetVersion failed")
    d = simulate(35)
    monkeypatch.setattr(rt, "driverGetVersion", boom)
    monkeypatch.setattr(rt, "runtimeGetVersion", boom)
    assert diagnosis.diagnose().case == "no_driver"
    monkeypatch.setattr(diagnosis, "LIBCUDA", PRESENT_LIB)
    assert diagnosis.diagnose().case == "no_driver"
    assert d.case == "no_driver"


# -- (e) CuPy missing or broken ---------------------------------------------------------------------
def test_cupy_not_installed_names_both_extras(monkeypatch, hidden_backend):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ModuleNotFoundError(name="cupy")
    monkeypatch.setattr(diagnosis, "LIBCUDA", PRESENT_LIB)  # a driver, so CuPy would help
    d = diagnosis.diagnose()
    assert d.case == "no_cupy" and d.what == "CuPy is not installed, so tensorlab has no CUDA backend"
    for words in (f"'{diagnosis.DIST}[cuda12]'", f"'{diagnosis.DIST}[cuda13]'", "R525", "R580", "nvidia-smi"):
        assert words in d.action
    _reported_everywhere(d)


def test_no_cupy_and_no_driver_is_told_the_cpu_needs_nothing(monkeypatch, hidden_backend):
    """A machine without an NVIDIA driver gets no advice to install ~1 GB of CUDA wheels that cannot help."""
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(diagnosis, "LIBCUDA", ABSENT_LIB)
    d = diagnosis.diagnose()
    assert d.case == "cpu_only" and "runs on the CPU here" in d.action and "needs nothing more" in d.action
    assert d.action.index("needs nothing more") < d.action.index("[cuda12]")  # the CPU story first
    _reported_everywhere(d)


def test_install_lines_never_name_the_package_index(monkeypatch, tmp_path):
    """From a checkout: its path as typed from the working directory; from a wheel: the file pip installed
    (PEP 610 provenance); unknown provenance: a placeholder, never `tensorlab-rt` from the index."""
    root = diagnosis.checkout_root()
    assert root is not None and os.path.samefile(diagnosis._install_target(), root)
    monkeypatch.chdir(root)
    assert diagnosis._install_target() == "."
    monkeypatch.setattr(diagnosis, "checkout_root", lambda: None)
    wheel = tmp_path / "tensorlab_rt-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    monkeypatch.setattr(diagnosis, "_wheel_source", lambda: str(wheel))
    assert os.path.samefile(diagnosis._install_target(), wheel)
    monkeypatch.setattr(diagnosis, "_wheel_source", lambda: None)
    assert diagnosis._install_target() == diagnosis.UNKNOWN_SOURCE
    assert "tensorlab-rt[" not in diagnosis.install_line("cuda12")


def test_cupy_that_fails_to_import(monkeypatch, hidden_backend):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("CuPy failed to load libnvrtc.so.12: cannot open shared object file")
        return real_import(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", fake_import)
    d = diagnosis.diagnose()
    assert d.case == "cupy_broken" and "ImportError: CuPy failed to load libnvrtc.so.12" in d.what
    assert "pip uninstall cupy-cuda12x cupy-cuda13x" in d.action


def test_usable_gpu_but_broken_backend(simulate, monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorlab.backends.cuda", None)
    monkeypatch.delattr(backends, "cuda", raising=False)
    d = simulate(None, count=1, driver=12040)
    assert d.case == "backend_broken" and "tensorlab's CUDA backend cannot be imported" in d.what


def test_a_usable_gpu_has_no_diagnosis(simulate):
    pytest.importorskip("tensorlab.backends.cuda")
    assert simulate(None, count=2, driver=12040) is None


def test_every_message_row_is_one_line_with_an_action():
    fields = dict(error="E", why="W", visible="", driver="12.4", runtime="13.0", wheel="cupy-cuda13x",
                  driver_major=12, min_driver="R580", cupy="14")
    for case in diagnosis.MESSAGES:
        d = diagnosis._make(case, **fields)
        assert d.what and d.action and "\n" not in str(d), case
        assert "insufficient" not in str(d).lower(), case


# -- the real answer on this machine ----------------------------------------------------------------
@pytest.mark.skipif(_libcuda_loads(), reason="an NVIDIA driver library is present on this machine")
def test_this_machine_without_a_driver_says_so(hidden_backend):
    d = diagnosis.diagnose()
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert d.case == "cpu_only"
    else:
        assert d.case == "no_driver" and d.what.startswith("no NVIDIA driver on this machine")
    assert "insufficient" not in str(d).lower()
    _reported_everywhere(d)


def test_conftest_skip_reason_is_one_short_line():
    import conftest
    d = backends.cuda_diagnosis()
    reason = conftest._cuda_skip_reason()
    assert reason == (None if d is None else f"no CUDA: {d.what}")
    if reason is not None:
        assert "\n" not in reason and len(reason) < 160
    skips = [m for m in conftest.DEVICES[1].marks if m.name == "skip"]
    if os.environ.get("TENSORLAB_CUDA_EMULATION") == "1" or d is None:
        assert skips == []  # the emulation pass runs every cuda parameter
    else:
        assert [m.kwargs["reason"] for m in skips] == [reason]
