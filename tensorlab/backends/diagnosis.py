"""Why CUDA cannot be used on this machine, in words a user can act on.

`diagnose()` is the one place that asks CuPy and the CUDA runtime; every "no CUDA" report
(to("cuda"), pin_memory(), tl.cuda.is_available's False, the bench header, gpu_check, the
notebooks' "Why:" lines, the test-skip reasons) prints its answer. The words live in MESSAGES,
one row per case.

What the CUDA runtime (cudart, which CuPy wheels bundle) answers; the first case observed with
CuPy 14.2 / cudart 12.9 on a machine without a driver, the others per CUDA's documented error codes:
- no driver library at all: cudaGetDeviceCount fails with cudaErrorInsufficientDriver and
  cudaDriverGetVersion succeeds with 0, so the error code alone cannot tell "no driver" from
  "old driver"; the driver version (and whether libcuda.so.1 loads) does;
- the toolkit's stub libcuda on the library path: cudaErrorStubLibrary;
- a driver but no device (CUDA_VISIBLE_DEVICES empty or listing nothing valid, a container
  started without GPU access, no GPU): cudaErrorNoDevice, or a count of 0;
- a driver older than the runtime: cudaErrorInsufficientDriver with the driver's CUDA version;
- a device held in exclusive-process mode or prohibited: cudaErrorDevicesUnavailable;
- a driver library newer or older than the loaded kernel module: cudaErrorSystemDriverMismatch.
CuPy exposes none of these codes as names, so they are spelled here once.
"""
from __future__ import annotations

import ctypes
import json
import os
import sys
from typing import NamedTuple
from urllib.parse import unquote, urlparse

# The distribution's name in its metadata (the import name is always `tensorlab`). tensorlab is not on the
# package index: no install hint ever names a package there (a stranger could register the name).
DIST_NAME = "tensorlab-rt"
# what an install line names when this copy's provenance is unknown
UNKNOWN_SOURCE = "<the tensorlab checkout or wheel you installed from>"


def checkout_root():
    """The source checkout this copy runs from (it has pyproject.toml and kernels/), or None."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if os.path.isfile(os.path.join(root, "pyproject.toml")) and os.path.isdir(os.path.join(root, "kernels")):
        return root
    return None


def _wheel_source():
    """Where pip installed this copy from (PEP 610's direct_url.json: a wheel file or a directory), while it
    is still there; None otherwise."""
    try:
        from importlib.metadata import distribution
        raw = distribution(DIST_NAME).read_text("direct_url.json")
        url = urlparse(json.loads(raw)["url"]) if raw else None
    except Exception:  # not installed as a distribution, or no provenance recorded
        return None
    if url is None or url.scheme != "file":
        return None
    path = unquote(url.path)
    return path if os.path.exists(path) else None


def _short(path):
    """path as the user would type it from the working directory: relative when that is shorter."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return rel if len(rel) < len(path) else path


def _install_target():
    """What an install line names: the checkout this copy runs from (relative to the working directory), or
    the wheel file / directory pip installed it from; never a name on the package index."""
    root = checkout_root()
    if root is not None:
        return _short(root)
    src = _wheel_source()
    return _short(src) if src is not None else UNKNOWN_SOURCE


DIST = _install_target()


def install_line(extras):
    """pip install 'TARGET[extras]' for this copy of tensorlab."""
    return f"pip install '{DIST}[{extras}]'"

# The driver library cudart loads (dlopen, so LD_LIBRARY_PATH counts, as it does for CUDA itself).
LIBCUDA = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"

# cudaError_t values the diagnosis tells apart (CUDA runtime API, driver_types.h).
STUB_LIBRARY = 34
INSUFFICIENT_DRIVER = 35
DEVICES_UNAVAILABLE = 46
NO_DEVICE = 100
INVALID_DEVICE = 101
SYSTEM_DRIVER_MISMATCH = 803

# The oldest Linux driver branch that supports each CUDA major version the extras target.
MIN_DRIVER = {12: "R525", 13: "R580"}
EXTRAS = (12, 13)

_PICK_EXTRA = (f"pip install '{DIST}[cuda12]' for a CUDA 12 driver ({MIN_DRIVER[12]} or newer) or "
               f"'{DIST}[cuda13]' for a CUDA 13 driver ({MIN_DRIVER[13]} or newer); nvidia-smi shows the "
               "driver's CUDA version")

# case -> (what is wrong, what to do). Fields in braces come from diagnose().
MESSAGES = {
    "cpu_only": (
        "no NVIDIA driver on this machine ({why}) and no CuPy",
        "tensorlab runs on the CPU here (device='cpu') and needs nothing more; CUDA needs a machine with an "
        "NVIDIA GPU and its driver, then " + _PICK_EXTRA),
    "no_cupy": (
        "CuPy is not installed, so tensorlab has no CUDA backend",
        "for a GPU, " + _PICK_EXTRA),
    "cupy_broken": (
        "CuPy is installed but cannot be imported ({error})",
        "keep exactly one CuPy wheel: pip uninstall cupy-cuda12x cupy-cuda13x, then " + _PICK_EXTRA),
    "no_driver": (
        "no NVIDIA driver on this machine ({why})",
        "tensorlab runs on the CPU here (device='cpu'); for CUDA, use a machine with an NVIDIA GPU and "
        "install its driver (nvidia-smi must work)"),
    "stub_driver": (
        "the CUDA driver library found is the CUDA toolkit's stub, not a driver (cudaErrorStubLibrary)",
        "remove the toolkit's lib64/stubs directory from LD_LIBRARY_PATH, and install the NVIDIA driver if "
        "nvidia-smi does not work"),
    "driver_mismatch": (
        "the NVIDIA driver library and the loaded kernel module are different versions "
        "(cudaErrorSystemDriverMismatch)",
        "reboot after the driver upgrade (or reload the nvidia kernel module); nvidia-smi shows the mismatch"),
    "hidden": (
        "CUDA_VISIBLE_DEVICES={visible!r} leaves this process no GPU ({error})",
        "unset CUDA_VISIBLE_DEVICES or set it to an index or UUID that nvidia-smi -L lists (if it lists none, "
        "this machine or container has no GPU access)"),
    "no_device": (
        "an NVIDIA driver (CUDA {driver}) is installed but this process sees no GPU ({error})",
        "check nvidia-smi -L; in a container, start it with GPU access (docker run --gpus all, or the "
        "nvidia.com/gpu resource on Kubernetes)"),
    "old_driver_other_extra": (
        "the NVIDIA driver supports CUDA {driver} but the installed CuPy wheel ({wheel}) needs CUDA {runtime}",
        "install the extra for the driver: pip uninstall {wheel}, then pip install '{dist}[cuda{driver_major}]'; "
        "or upgrade the driver to {min_driver}"),
    "old_driver_upgrade": (
        "the NVIDIA driver supports CUDA {driver} but the installed CuPy wheel ({wheel}) needs CUDA {runtime}",
        "upgrade the NVIDIA driver to one for CUDA {runtime} ({min_driver}): tensorlab's extras "
        "need a CUDA 12 or 13 driver"),
    "busy": (
        "the GPU is busy or unavailable (cudaErrorDevicesUnavailable)",
        "another process holds it in exclusive-process compute mode, or its mode is prohibited: nvidia-smi "
        "shows the processes and the compute mode; wait for it, pick another GPU with CUDA_VISIBLE_DEVICES, "
        "or have an admin run nvidia-smi -c DEFAULT"),
    "cuda_error": (
        "CUDA reported {error}",
        "check nvidia-smi; the error comes unchanged from the CUDA runtime (CuPy {cupy})"),
    "backend_broken": (
        "tensorlab's CUDA backend cannot be imported ({error})",
        "reinstall tensorlab with its CUDA extra: " + _PICK_EXTRA),
}


class Diagnosis(NamedTuple):
    """One answer: the MESSAGES case, what is wrong, and what to do about it."""
    case: str
    what: str
    action: str

    def __str__(self):
        return f"{self.what}: {self.action}"


def _make(case, **fields):
    fields.setdefault("dist", DIST)
    what, action = MESSAGES[case]
    return Diagnosis(case, what.format(**fields), action.format(**fields))


def _version(v):
    """CUDA's integer versions (12090) as people write them (12.9)."""
    return f"{v // 1000}.{v % 1000 // 10}"


def _error_name(e):
    """'cudaErrorXxx (code N): message' from a CUDARuntimeError, or the exception as it came."""
    status = getattr(e, "status", None)
    text = str(e)
    if status is None:
        return f"{type(e).__name__}: {text}"
    name, _, message = text.partition(": ")
    return f"{name} (code {status}): {message}" if message else f"{text} (code {status})"


def _libcuda_error():
    """None when the driver library loads, else why not (the loader's own words)."""
    try:
        ctypes.CDLL(LIBCUDA)
    except OSError as e:
        text = str(e)
        # the loader's "cannot open shared object file: No such file or directory" says only this
        missing = not text or any(w in text for w in ("No such file", "not found", "Could not find"))
        return f"{LIBCUDA} not found" if missing else text
    return None


def _call(fn, default=0):
    try:
        return int(fn())
    except Exception:
        return default


def _insufficient_driver(rt):
    """cudaErrorInsufficientDriver: no driver at all (version 0) or one older than the runtime."""
    driver = _call(rt.driverGetVersion)
    missing = _libcuda_error()
    if driver == 0 or missing is not None:
        return _make("no_driver", why=missing or f"{LIBCUDA} loads but reports no CUDA version")
    runtime = _call(rt.runtimeGetVersion)
    if runtime and driver >= runtime:  # not an old driver after all: say what CUDA said
        return None
    rt_major, drv_major = runtime // 1000, driver // 1000
    wheel = f"cupy-cuda{rt_major}x" if rt_major else "the CuPy wheel"
    fields = dict(driver=_version(driver), runtime=_version(runtime) if runtime else "unknown", wheel=wheel,
                  driver_major=drv_major,
                  min_driver=f"{MIN_DRIVER[rt_major]} or newer" if drv_major < rt_major and rt_major in MIN_DRIVER
                  else "the newest your GPU supports")
    if drv_major in EXTRAS and drv_major != rt_major:
        return _make("old_driver_other_extra", **fields)
    return _make("old_driver_upgrade", **fields)


def _from_status(rt, status, error):
    if status == INSUFFICIENT_DRIVER:
        return _insufficient_driver(rt)
    if status == STUB_LIBRARY:
        return _make("stub_driver")
    if status == SYSTEM_DRIVER_MISMATCH:
        return _make("driver_mismatch")
    if status == DEVICES_UNAVAILABLE:
        return _make("busy")
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if status in (NO_DEVICE, INVALID_DEVICE) and visible is not None:
        return _make("hidden", visible=visible, error=error)
    if status == NO_DEVICE:
        driver = _call(rt.driverGetVersion)
        return _make("no_device", driver=_version(driver) if driver else "unknown", error=error)
    return None


def diagnose():
    """A Diagnosis of why CUDA cannot be used here, or None when a GPU can. Never raises."""
    try:
        import cupy
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] in ("cupy", "cupy_backends"):
            missing = _libcuda_error()  # no driver either: the CPU is all there is, and all that is needed
            return _make("no_cupy") if missing is None else _make("cpu_only", why=missing)
        return _make("cupy_broken", error=f"{type(e).__name__}: {e}")
    except Exception as e:  # a CuPy that fails to load its CUDA libraries, or two CuPy wheels at once
        return _make("cupy_broken", error=f"{type(e).__name__}: {e}")
    try:
        rt = cupy.cuda.runtime
        try:
            count = int(rt.getDeviceCount())
        except Exception as e:
            status = getattr(e, "status", None)
            found = _from_status(rt, status, _error_name(e)) if status is not None else None
            return found or _make("cuda_error", error=_error_name(e), cupy=getattr(cupy, "__version__", "?"))
        if count == 0:
            return _from_status(rt, NO_DEVICE, "cudaGetDeviceCount returned 0")
        try:
            from . import cuda  # noqa: F401
        except ImportError as e:
            return _make("backend_broken", error=f"{type(e).__name__}: {e}")
    except Exception as e:  # the diagnosis itself must never be the failure
        return _make("cuda_error", error=_error_name(e), cupy=getattr(cupy, "__version__", "?"))
    return None
