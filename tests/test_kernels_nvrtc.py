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


@pytest.mark.parametrize("arch", ["80", "90"])
@pytest.mark.parametrize("source", sorted(KERNELS))
def test_kernel_compiles_with_nvrtc(source, arch):
    nvrtc, cuda_include = _nvrtc()
    path = kernel_dir() / source
    prog = nvrtc.createProgram(path.read_text(), source, (), ())
    try:
        for expr in KERNELS[source]:
            nvrtc.addNameExpression(prog, expr)
        opts = ["-std=c++17", f"--gpu-architecture=sm_{arch}", f"-I{kernel_dir()}", f"-I{cuda_include}"]
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception as e:
            pytest.fail(f"{source} failed to compile for sm_{arch}: {e}\n{nvrtc.getProgramLog(prog)}")
        cubin = nvrtc.getCUBIN(prog)
        assert len(cubin) > 0
        for expr in KERNELS[source]:
            assert nvrtc.getLoweredName(prog, expr).startswith("_Z"), expr
    finally:
        nvrtc.destroyProgram(prog)
