"""tensorlab.backends.cuda.nvrtc: the CuPy driver's kernel compiles (NVRTC without CuPy's -ftz=true)
and their disk cache. No GPU needed: NVRTC runs on the CPU. The tests that run NVRTC skip when it
is not installed (and fail in CI, which must install it, as test_kernels_nvrtc.py does); the cache
and target-selection tests stand NVRTC in with a fake and run everywhere."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

from tensorlab.backends.cuda import nvrtc
from tensorlab.backends.cuda.cupy_driver import CupyDriver
from tensorlab.kernel_table import KERNELS
from tensorlab.kernels_path import kernel_dir

OPTIONS = ("-std=c++17",)  # modules.OPTIONS
MUL = "binary_kernel<tl::op::Mul, float, int>"


def _real_nvrtc():
    """Skip (fail in CI) unless NVRTC and the CUDA runtime headers matching it are installed."""
    if os.environ.get("TENSORLAB_CUDA_EMULATION") == "1":
        pytest.skip("NVRTC's builtins cannot load in the ASan-preloaded emulated run")
    why = None
    try:
        major = nvrtc.version()[0]
        nvrtc.supported_archs()
        if nvrtc.runtime_include() is None:
            why = f"no CUDA {major} runtime headers (cuda_runtime.h)"
    except Exception as e:
        why = f"{type(e).__name__}: {e}"
    if why:
        packages = ("cupy-cuda12x, nvidia-cuda-nvrtc-cu12 and nvidia-cuda-runtime-cu12 (CUDA 12), or cupy-cuda13x, "
                    "nvidia-cuda-nvrtc and nvidia-cuda-runtime (CUDA 13)")
        if os.environ.get("CI"):
            pytest.fail(f"CI must install the NVRTC compiler and the CUDA runtime headers, {packages}: {why}")
        pytest.skip(f"NVRTC not installed ({packages}): {why}")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cubin"
    monkeypatch.setenv(nvrtc.CACHE_ENV, str(d))
    return d


def _options(source="elementwise.cu"):
    """Exactly what CupyDriver.load_module compiles kernels/ sources with (a pure function: no GPU)."""
    return CupyDriver().compile_options(kernel_dir() / source, OPTIONS)


def _without(monkeypatch, arch):
    """Make this NVRTC look as if it did not know sm_`arch` (a device newer than the compiler)."""
    real = nvrtc.supported_archs()
    monkeypatch.setattr(nvrtc, "supported_archs", lambda: tuple(a for a in real if a != arch))


# -- with NVRTC -------------------------------------------------------------------------------------
def test_compiles_a_kernel_table_instantiation_to_an_sm_90_cubin_with_its_lowered_name(cache):
    _real_nvrtc()
    path = kernel_dir() / "elementwise.cu"
    assert MUL in KERNELS["elementwise.cu"]
    built = nvrtc.compile(path, (MUL,), _options(), 90)
    assert built.kind == "cubin" and built.binary[:4] == b"\x7fELF"
    low = built.lowered[MUL]
    assert low.startswith("_Z13binary_kernelIN2tl2op3MulEfi") and set(built.lowered) == {MUL}
    assert low.encode() in built.binary  # the symbol the driver's cuModuleGetFunction looks up
    assert built.path.parent == cache and built.path.suffix == ".cubin" and built.path.read_bytes() == built.binary


def test_several_name_expressions_in_one_program():
    _real_nvrtc()
    exprs = tuple(KERNELS["fill.cu"][:3])
    built = nvrtc.compile(kernel_dir() / "fill.cu", exprs, _options("fill.cu"), 80, cache=False)
    assert built.path is None and set(built.lowered) == set(exprs)
    assert len(set(built.lowered.values())) == 3
    assert all(name.encode() in built.binary for name in built.lowered.values())


def test_no_flush_to_zero_the_ptx_of_a_float_multiply_has_no_ftz(monkeypatch):
    """CuPy's compiler appends -ftz=true (mul.ftz.f32: float32 denormals become zero); the driver's
    options and compile() add nothing of the kind. The PTX target (as for a device newer than
    NVRTC) shows the instructions; -ftz=true added by hand shows the check can fail."""
    _real_nvrtc()
    opts = _options()
    assert not any("ftz" in o for o in opts)
    assert not any(o.startswith(("-arch", "--gpu-architecture", "--use_fast_math", "-use_fast_math")) for o in opts)
    _without(monkeypatch, 90)
    path = kernel_dir() / "elementwise.cu"
    built = nvrtc.compile(path, (MUL,), opts, 90, cache=False)
    assert built.kind == "ptx"
    ptx = built.binary.decode()
    assert f".target sm_{nvrtc.target(90)[0].rsplit('_', 1)[1]}" in ptx
    assert "mul.rn.f32" in ptx and ".ftz" not in ptx
    flushed = nvrtc.compile(path, (MUL,), opts + ("-ftz=true",), 90, cache=False).binary.decode()
    assert "mul.rn.ftz.f32" in flushed


def test_the_second_compile_is_a_cache_hit_that_does_not_run_nvrtc(cache, monkeypatch):
    _real_nvrtc()
    path = kernel_dir() / "fill.cu"
    expr = KERNELS["fill.cu"][0]
    first = nvrtc.compile(path, (expr,), _options("fill.cu"), 90)

    def no_nvrtc(*a, **k):
        raise AssertionError("NVRTC ran on a cache hit")
    monkeypatch.setattr(nvrtc, "_nvrtc_compile", no_nvrtc)
    monkeypatch.setattr(nvrtc, "_lib", no_nvrtc)
    again = nvrtc.compile(path, (expr,), _options("fill.cu"), 90)
    assert again.binary == first.binary and again.lowered == first.lowered and again.path == first.path
    assert again.kind == "cubin"
    with pytest.raises(AssertionError, match="NVRTC ran"):  # an edited header (another digest) is a miss
        nvrtc.compile(path, (expr,), OPTIONS + ("-DTENSORLAB_HEADERS_DIGEST=0x1",), 90)


def test_a_compile_error_names_the_source_and_expression_with_nvrtcs_log(tmp_path, cache):
    _real_nvrtc()
    src = tmp_path / "broken.cu"
    src.write_text("template <typename T> __global__ void k(T* x) { x[0] = undefined_name; }\n")
    with pytest.raises(RuntimeError) as e:
        nvrtc.compile(src, ("k<float>",), OPTIONS, 90)
    err = e.value
    assert isinstance(err, nvrtc.CompileError)
    assert str(err).startswith("compiling broken.cu (k<float>) for sm_90 failed:\n")
    assert 'identifier "undefined_name" is undefined' in str(err) and "broken.cu(1)" in err.log
    assert not cache.exists() or not list(cache.iterdir())  # nothing cached


def test_concurrent_threads_and_processes_compile_the_same_kernel_into_one_entry(cache):
    _real_nvrtc()
    path = kernel_dir() / "fill.cu"
    expr = KERNELS["fill.cu"][1]
    opts = _options("fill.cu")
    results, errors = [], []

    def one():
        try:
            results.append(nvrtc.compile(path, (expr,), opts, 90))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)
    code = ("import sys, hashlib; from tensorlab.backends.cuda import nvrtc; "
            f"b = nvrtc.compile({str(path)!r}, ({expr!r},), {opts!r}, 90); "
            "print(b.lowered[sys.argv[1]], hashlib.sha256(b.path.read_bytes()).hexdigest())")
    procs = [subprocess.Popen([sys.executable, "-c", code, expr], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[1]) for _ in range(2)]
    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outs = [p.communicate(timeout=120)[0].split() for p in procs]
    assert not errors and all(p.returncode == 0 for p in procs)
    assert len({r.lowered[expr] for r in results} | {o[0] for o in outs}) == 1
    for r in results:  # whichever write won, every caller got a whole, consistent binary
        assert r.path.read_bytes()[:4] == b"\x7fELF"
    key = nvrtc.cache_key(path.read_text(), (expr,), opts, "--gpu-architecture=sm_90")
    assert sorted(p.name for p in cache.iterdir()) == [f"{key}.cubin", f"{key}.json"]  # no temp files left
    entry = json.loads((cache / f"{key}.json").read_text())
    assert entry["binary"] == f"{key}.cubin" and entry["lowered"] == {expr: results[0].lowered[expr]}
    # racing writers may leave one's binary with another's index (NVRTC's output differs by a few
    # bytes between compiles): that is a miss, and the compile after it leaves a consistent entry
    nvrtc.compile(path, (expr,), opts, 90)
    assert nvrtc._load_entry(cache, key, (expr,)) is not None


def test_runtime_include_matches_nvrtcs_major_version():
    _real_nvrtc()
    inc = nvrtc.runtime_include()
    assert (inc / "cuda_runtime.h").is_file() and (inc / "cuda_fp16.h").is_file()
    assert nvrtc._header_major(inc) == nvrtc.version()[0]
    assert f"-I{inc}" in _options()


# -- without NVRTC: target selection, headers lookup, the cache ----------------------------------------
@pytest.fixture
def fake_nvrtc(monkeypatch):
    """NVRTC 12.9 stood in: supported architectures, and a compile that records its calls."""
    calls = []

    def fake_compile(text, name, exprs, options, kind):
        calls.append((name, exprs, options, kind))
        binary = (b"\x7fELF" if kind == "cubin" else b"// ptx\n") + hashlib.sha256(text.encode()).digest() * 64
        return binary, {e: f"_Z1k{len(e)}" for e in exprs}, "a warning"
    monkeypatch.setattr(nvrtc, "version", lambda: (12, 9))
    monkeypatch.setattr(nvrtc, "supported_archs", lambda: (75, 80, 86, 89, 90, 100, 120))
    monkeypatch.setattr(nvrtc, "_nvrtc_compile", fake_compile)
    return calls


def test_target_is_the_devices_cubin_else_ptx_for_the_newest_older_virtual_arch(fake_nvrtc):
    assert nvrtc.target(90) == ("--gpu-architecture=sm_90", "cubin")
    assert nvrtc.target("86") == ("--gpu-architecture=sm_86", "cubin")
    assert nvrtc.target(121) == ("--gpu-architecture=compute_120", "ptx")  # newer than this NVRTC
    assert nvrtc.target(87) == ("--gpu-architecture=compute_86", "ptx")
    with pytest.raises(RuntimeError, match=r"NVRTC 12\.9 cannot compile for sm_70"):
        nvrtc.target(70)


def test_compile_adds_only_the_architecture_and_refuses_one_given(fake_nvrtc, tmp_path, cache):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    built = nvrtc.compile(src, ("k",), ("-std=c++17", "-I/x"), 121)
    assert fake_nvrtc == [("k.cu", ("k",), ("-std=c++17", "-I/x", "--gpu-architecture=compute_120"), "ptx")]
    assert built.kind == "ptx" and built.path.suffix == ".ptx" and built.log == "a warning"
    with pytest.raises(ValueError, match="adds the architecture itself"):
        nvrtc.compile(src, ("k",), ("-arch=sm_80",), 90)


def test_cache_keys_hits_and_a_damaged_binary(fake_nvrtc, tmp_path, cache):
    src = tmp_path / "k.cu"
    src.write_text("template <int N> __global__ void k() {}\n")
    a = nvrtc.compile(src, ("k<1>",), OPTIONS, 90)
    assert len(fake_nvrtc) == 1 and a.path.parent == cache
    b = nvrtc.compile(src, ("k<1>",), OPTIONS, 90)
    assert len(fake_nvrtc) == 1 and b == a  # a hit: binary, kind, lowered names, path, log
    nvrtc.compile(src, ("k<1>",), OPTIONS, 90, source=src.read_text())  # the same text given: a hit
    assert len(fake_nvrtc) == 1
    for change in ({"expr": ("k<2>",)}, {"opts": OPTIONS + ("-DX",)}, {"arch": 89}, {"text": "// edited\n"}):
        nvrtc.compile(src, change.get("expr", ("k<1>",)), change.get("opts", OPTIONS), change.get("arch", 90),
                      source=src.read_text() + change.get("text", ""))
    assert len(fake_nvrtc) == 5  # each a miss
    a.path.write_bytes(a.binary[:100])  # truncated behind our back: a miss, compiled and stored again
    c = nvrtc.compile(src, ("k<1>",), OPTIONS, 90)
    assert len(fake_nvrtc) == 6 and c.binary == a.binary and c.path.read_bytes() == a.binary
    key = nvrtc.cache_key(src.read_text(), ("k<1>",), OPTIONS, "--gpu-architecture=sm_90")
    (cache / f"{key}.json").write_text("{not json")
    nvrtc.compile(src, ("k<1>",), OPTIONS, 90)
    assert len(fake_nvrtc) == 7
    assert not list(cache.glob(".*"))  # no temporary files left behind


def test_concurrent_writers_and_readers_never_see_half_an_entry(fake_nvrtc, cache):
    """Writers store the same 1 MiB entry over and over while readers load it: a reader sees no
    entry (before the first write) or the whole one, never a torn binary or index."""
    binary = os.urandom(1 << 20)
    lowered = {"k<float>": "_Z1kIfEvv"}
    key = "0" * 40
    bad, stop = [], threading.Event()

    def write():
        for _ in range(30):
            nvrtc._store_entry(cache, key, "k.cu", binary, "cubin", lowered, "")

    def read():
        while not stop.is_set():
            got = nvrtc._load_entry(cache, key, ("k<float>",))
            if got is not None and (got.binary != binary or got.lowered != lowered):
                bad.append(got)
    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write) for _ in range(3)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    for t in readers:
        t.join()
    assert not bad
    assert nvrtc._load_entry(cache, key, ("k<float>",)).binary == binary
    assert sorted(p.name for p in cache.iterdir()) == [f"{key}.cubin", f"{key}.json"]


def test_an_unwritable_cache_falls_back_to_a_private_directory(fake_nvrtc, tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv(nvrtc.CACHE_ENV, str(blocker / "cubin"))  # cannot be created under a file
    monkeypatch.setattr(nvrtc, "_fallback", None)
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k() {}\n")
    with pytest.warns(RuntimeWarning, match="is not writable"):
        built = nvrtc.compile(src, ("k",), OPTIONS, 90)
    assert built.path.is_file() and built.path.parent == nvrtc._fallback
    assert nvrtc.compile(src, ("k",), OPTIONS, 90) == built and len(fake_nvrtc) == 1  # a hit there


def test_cache_dir_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(nvrtc.CACHE_ENV, str(tmp_path / "x"))
    assert nvrtc.cache_dir() == tmp_path / "x"
    monkeypatch.delenv(nvrtc.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert nvrtc.cache_dir() == tmp_path / "xdg" / "tensorlab" / "cubin"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert nvrtc.cache_dir() == tmp_path / "home" / ".cache" / "tensorlab" / "cubin"


def _headers(root, version):
    root.mkdir(parents=True)
    (root / "cuda_runtime.h").write_text("")
    (root / "cuda_runtime_api.h").write_text(f"#define CUDART_VERSION  {version}\n")
    return root


@pytest.mark.parametrize("major, want", [(13, "cu13"), (12, "cuda_runtime")])
def test_runtime_include_finds_the_cuda_12_and_13_wheel_layouts(tmp_path, monkeypatch, major, want):
    """nvidia-cuda-runtime 13.x installs nvidia/cu13/include/cuda_runtime.h (one tree for every
    component); nvidia-cuda-runtime-cu12 installs nvidia/cuda_runtime/include. Headers of NVRTC's
    major version win; another version's are the last resort."""
    found = {"cu13": _headers(tmp_path / "a" / "cu13" / "include", 13000),
             "cuda_runtime": _headers(tmp_path / "b" / "cuda_runtime" / "include", 12090)}
    fake = types.ModuleType("nvidia")
    fake.__path__ = [str(tmp_path / "b"), str(tmp_path / "a")]
    monkeypatch.setitem(sys.modules, "nvidia", fake)
    monkeypatch.setattr(nvrtc, "version", lambda: (major, 0))
    assert nvrtc.runtime_include.__wrapped__() == found[want]
    monkeypatch.setattr(nvrtc, "version", lambda: (14, 0))  # nothing matches: the first headers found
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    assert nvrtc.runtime_include.__wrapped__() == found["cuda_runtime"]


def test_runtime_include_falls_back_to_cuda_path(tmp_path, monkeypatch):
    fake = types.ModuleType("nvidia")
    fake.__path__ = []
    monkeypatch.setitem(sys.modules, "nvidia", fake)
    monkeypatch.setitem(sys.modules, "cuda.pathfinder", None)  # as if CuPy's pathfinder were absent
    monkeypatch.setattr(nvrtc, "version", lambda: (12, 4))
    toolkit = tmp_path / "cuda-12.4"
    _headers(toolkit / "include", 12040)
    monkeypatch.setenv("CUDA_PATH", str(toolkit))
    assert nvrtc.runtime_include.__wrapped__() == toolkit / "include"


def test_the_module_imports_no_cupy_until_it_compiles():
    code = ("import sys; import tensorlab.backends.cuda.nvrtc as n; n.cache_dir(); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cupy', 'cupy_backends')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "[]"
