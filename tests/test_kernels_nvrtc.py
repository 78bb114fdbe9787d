"""Layer 1 of keeping the CUDA path honest without a GPU: every kernel source and every template
instantiation in tensorlab.kernel_table compiles with NVRTC for sm_80 and sm_90. NVRTC needs no
GPU (cupy-cuda12x + nvidia-cuda-nvrtc-cu12 + nvidia-cuda-runtime-cu12 for the headers). In CI the
compiler must be present; elsewhere the test is skipped when it is not installed."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tensorlab.kernel_table import KERNELS
from tensorlab.kernels_path import kernel_dir, kernel_sources


def _nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc
        import nvidia.cuda_runtime as rt
    except Exception as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI must install the NVRTC compiler (cupy-cuda12x, nvidia-cuda-nvrtc-cu12, "
                        f"nvidia-cuda-runtime-cu12): {e}")
        pytest.skip(f"NVRTC not installed: {e}")
    return nvrtc, Path(list(rt.__path__)[0]) / "include"


def test_every_kernel_source_has_a_table_row():
    assert sorted(p.name for p in kernel_sources()) == sorted(KERNELS)


TEST_KERNELS = Path(__file__).parent / "kernels"


def _compile(path, names, arch):
    nvrtc, cuda_include = _nvrtc()
    prog = nvrtc.createProgram(path.read_text(), path.name, (), ())
    try:
        for expr in names:
            nvrtc.addNameExpression(prog, expr)
        opts = ["-std=c++17", f"--gpu-architecture=sm_{arch}", f"-I{kernel_dir()}", f"-I{cuda_include}"]
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception as e:
            pytest.fail(f"{path.name} failed to compile for sm_{arch}: {e}\n{nvrtc.getProgramLog(prog)}")
        assert len(nvrtc.getCUBIN(prog)) > 0
        for expr in names:
            assert nvrtc.getLoweredName(prog, expr).startswith("_Z"), expr
    finally:
        nvrtc.destroyProgram(prog)


@pytest.mark.parametrize("arch", ["80", "90"])
@pytest.mark.parametrize("source", sorted(KERNELS))
def test_kernel_compiles_with_nvrtc(source, arch):
    _compile(kernel_dir() / source, KERNELS[source], arch)


def _test_kernel_names():
    """Test-only kernels (tests/kernels/) are plain CUDA too: the emulation tests run them, and
    they must mean the same thing to NVRTC. (Checked here, outside the ASan-preloaded emulated
    run, where NVRTC's builtins cannot load.)"""
    from test_cuda_emulation import NAMES, PROBE
    return {PROBE.name: NAMES, "philox_kat.cu": ("philox_kat",)}


def test_every_test_kernel_is_listed():
    assert sorted(p.name for p in TEST_KERNELS.glob("*.cu")) == sorted(_test_kernel_names())


@pytest.mark.parametrize("source", ["emulation_probe.cu", "philox_kat.cu"])
def test_test_kernel_compiles_with_nvrtc(source):
    _compile(TEST_KERNELS / source, _test_kernel_names()[source], "80")
