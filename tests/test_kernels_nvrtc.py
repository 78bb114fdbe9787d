"""Layer 1 of keeping the CUDA path honest without a GPU: every kernel source and every template
instantiation in tensorlab.kernel_table compiles with NVRTC for sm_80 and sm_90, and none of them
spills registers to local memory (ptxas's resource report, which NVRTC passes on with
--ptxas-options=-v). NVRTC needs no GPU: CUDA 12 (cupy-cuda12x + nvidia-cuda-nvrtc-cu12 +
nvidia-cuda-runtime-cu12 for the headers) or CUDA 13 (cupy-cuda13x + nvidia-cuda-nvrtc +
nvidia-cuda-runtime). In CI the compiler must be present; elsewhere the test is skipped when it is
not installed."""
from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tensorlab.kernel_table import KERNELS
from tensorlab.kernels_path import kernel_dir, kernel_sources

PACKAGES = ("cupy-cuda12x, nvidia-cuda-nvrtc-cu12 and nvidia-cuda-runtime-cu12 (CUDA 12), or cupy-cuda13x, "
            "nvidia-cuda-nvrtc and nvidia-cuda-runtime (CUDA 13)")


def _missing(why):
    if os.environ.get("CI"):
        pytest.fail(f"CI must install the NVRTC compiler and the CUDA runtime headers, {PACKAGES}: {why}")
    pytest.skip(f"NVRTC not installed ({PACKAGES}): {why}")


def _runtime_include(major):
    """The CUDA runtime headers (cuda_fp16.h needs them) of the NVIDIA wheels for NVRTC's CUDA
    `major`: nvidia/cu<major>/include (one directory for every component, from CUDA 13 on), or
    CUDA 12's nvidia/cuda_runtime/include. None when not installed (never another version's)."""
    try:
        import nvidia
    except ImportError:
        return None
    for base in map(Path, getattr(nvidia, "__path__", ())):
        for inc in [base / f"cu{major}" / "include"] + ([base / "cuda_runtime" / "include"] if major <= 12 else []):
            if (inc / "cuda_runtime.h").is_file():
                return inc
    return None


def _nvrtc():
    try:
        from cupy_backends.cuda.libs import nvrtc
        major = nvrtc.getVersion()[0]
    except Exception as e:
        _missing(e)
    include = _runtime_include(major)
    if include is None:
        _missing(f"no CUDA {major} runtime headers (cuda_runtime.h) under site-packages/nvidia")
    return nvrtc, include


def test_every_kernel_source_has_a_table_row():
    assert sorted(p.name for p in kernel_sources()) == sorted(KERNELS)


TEST_KERNELS = Path(__file__).parent / "kernels"

# ptxas -v, per compiled function (kernels and the device functions they call):
#   ptxas info    : Function properties for <mangled name>
#   ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
_PROPERTIES = re.compile(r"Function properties for (\S+)\s*\n[^\n]*?(\d+) bytes stack frame, "
                         r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_SPILLS = {}  # (source, arch) -> [(function, spill stores, spill loads)] of every function ptxas reported
_PTX = {}  # (source, arch) -> (the program's PTX, {lowered name: name expression})


def _compile(path, names, arch):
    """Compile `path` with the name expressions `names` for sm_`arch`; returns ptxas's spills per
    function (name expressions for the kernels, mangled names for other device functions)."""
    nvrtc, cuda_include = _nvrtc()
    prog = nvrtc.createProgram(path.read_text(), path.name, (), ())
    try:
        for expr in names:
            nvrtc.addNameExpression(prog, expr)
        opts = ["-std=c++17", f"--gpu-architecture=sm_{arch}", f"-I{kernel_dir()}", f"-I{cuda_include}",
                "--ptxas-options=-v"]
        try:
            nvrtc.compileProgram(prog, opts)
        except Exception as e:
            pytest.fail(f"{path.name} failed to compile for sm_{arch}: {e}\n{nvrtc.getProgramLog(prog)}")
        assert len(nvrtc.getCUBIN(prog)) > 0
        lowered = {nvrtc.getLoweredName(prog, expr): expr for expr in names}
        for name, expr in lowered.items():
            assert name.startswith("_Z"), expr
        report = _PROPERTIES.findall(nvrtc.getProgramLog(prog))
        if arch == "90":  # the PTX the FP64 test reads (sm_90's only: one program's worth kept)
            ptx = nvrtc.getPTX(prog)
            _PTX[path.name, arch] = (ptx.decode() if isinstance(ptx, bytes) else ptx, lowered)
        return [(lowered.get(fn, fn), int(st), int(ld)) for fn, _, st, ld in report]
    finally:
        nvrtc.destroyProgram(prog)


ARCHS = ("80", "90")
_PENDING = {}  # (source, arch) -> the Future of its compile
_POOL = []  # the thread pool the compiles run on, made on first use


def _compiled(source, arch):
    """_compile(source, arch)'s report, both archs of a source compiled at once on two threads
    (NVRTC compiles without the GIL: CI's two cores halve the longest step of the CPU pass)."""
    if (source, arch) not in _PENDING:
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(min(len(ARCHS), os.cpu_count() or 1), thread_name_prefix="nvrtc"))
        for a in ARCHS:
            if (source, a) not in _SPILLS and (source, a) not in _PENDING:
                _PENDING[source, a] = _POOL[0].submit(_compile, kernel_dir() / source, KERNELS[source], a)
    return _PENDING.pop((source, arch)).result()


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("source", sorted(KERNELS))
def test_kernel_compiles_with_nvrtc(source, arch):
    _SPILLS[source, arch] = _compiled(source, arch)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("source", sorted(KERNELS))
def test_no_kernel_spills_registers(source, arch):
    """A spill is a local-memory round trip in what should be register code: the hot kernels
    (matmul's register tile, the elementwise loops, reductions) are written to fit, so a change
    that makes ptxas spill is a performance regression. Reads the report the compile test above
    produced (compiling again only when it did not run in this process)."""
    report = _SPILLS.get((source, arch))
    if report is None:
        report = _SPILLS[source, arch] = _compiled(source, arch)
    reported = {fn for fn, _, _ in report}
    unreported = [e for e in KERNELS[source] if e not in reported]
    assert not unreported, f"ptxas reported no resource usage for {unreported[:5]} (sm_{arch})"
    spills = [f"{fn}: {st} bytes spill stores, {ld} bytes spill loads" for fn, st, ld in report if st or ld]
    assert not spills, f"{source} spills registers on sm_{arch}:\n" + "\n".join(spills)


# PTX functions (.entry kernels, .func device functions) and the calls between them
_PTX_FUNCTION = re.compile(r"^(?:\.visible\s+|\.weak\s+|\.extern\s+)*\.(entry|func)\s+(?:\([^)]*\)\s*)?([\w$]+)", re.M)
_CALL = re.compile(r"\bcall(?:\.uni)?\s+(?:\([^)]*\),\s*)?([\w$]+)")
_F64 = re.compile(r"^\s*(?:@!?%p\d+\s+)?([a-z][\w.]*\.f64\b[\w.]*)", re.M)
_FLOAT_TYPES = re.compile(r"\b(float|__half|__nv_bfloat16)\b")


def _fp64_per_kernel(ptx, lowered):
    """{name expression: the .f64 instructions it runs} over each kernel's PTX body and the device
    functions it calls (transitively)."""
    starts = [(m.start(), m.group(2)) for m in _PTX_FUNCTION.finditer(ptx)] + [(len(ptx), None)]
    body = {name: ptx[a:b] for (a, name), (b, _) in zip(starts, starts[1:])}
    out = {}
    for low, expr in lowered.items():
        seen, todo, ops = set(), [low], []
        while todo:
            f = todo.pop()
            if f in seen or f not in body:
                continue
            seen.add(f)
            ops += _F64.findall(body[f])
            todo += _CALL.findall(body[f])
        out[expr] = ops
    return out


@pytest.mark.parametrize("source", sorted(KERNELS))
def test_no_fp64_instruction_in_float_kernels(source):
    """Issue 37: FP64 only in float64 kernels. Every instantiation whose types name float, __half or
    __nv_bfloat16 and not double runs no .f64 instruction (arithmetic, conversion, load, store or
    move), in its own PTX or a device function it calls: the float special functions, sin/cos/tan
    (trig_float.cuh), float64 operands of the runtime-dtype kernels (cast.cuh's integer conversions)
    and reduce_kernel's double argument (passed as its bits). Reads the sm_90 compile above."""
    if (source, "90") not in _PTX:
        _SPILLS[source, "90"] = _compiled(source, "90")
    ptx, lowered = _PTX[source, "90"]
    found = {e: ops for e, ops in _fp64_per_kernel(ptx, lowered).items()
             if ops and _FLOAT_TYPES.search(e) and "double" not in e}
    assert not found, f"FP64 instructions in {len(found)} float kernels of {source}:\n" + "\n".join(
        f"  {e}: {sorted(set(ops))[:6]}" for e, ops in sorted(found.items())[:20])


def _test_kernel_names():
    """Test-only kernels (tests/kernels/) are plain CUDA too: the emulation tests run them, and
    they must mean the same thing to NVRTC. (Checked here, outside the ASan-preloaded emulated
    run, where NVRTC's builtins cannot load.)"""
    from test_attention_flash import PROBE as MMA_PROBE, PROBE_NAMES as MMA_NAMES
    from test_cuda_emulation import NAMES, PROBE
    return {PROBE.name: NAMES, "philox_kat.cu": ("philox_kat",), MMA_PROBE.name: MMA_NAMES}


def test_every_test_kernel_is_listed():
    assert sorted(p.name for p in TEST_KERNELS.glob("*.cu")) == sorted(_test_kernel_names())


@pytest.mark.parametrize("source", ["emulation_probe.cu", "philox_kat.cu", "mma_probe.cu"])
def test_test_kernel_compiles_with_nvrtc(source):
    _compile(TEST_KERNELS / source, _test_kernel_names()[source], "80")


def test_mma_falls_back_to_shuffles_before_sm_80():
    """sm_75 has no mma.sync m16n8k16: kernels/tensorlab/mma.cuh's shuffle path compiles there."""
    _compile(TEST_KERNELS / "mma_probe.cu", _test_kernel_names()["mma_probe.cu"], "75")
