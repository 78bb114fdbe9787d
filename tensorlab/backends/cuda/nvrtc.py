"""Kernel compiles for real GPUs: NVRTC called directly, with an on-disk cache. Needs no GPU.

Why not CuPy's compiler (``cp.RawModule(code=...)``): CuPy's ``_compile_with_cache_cuda``
(cupy/cuda/compiler.py) appends ``-ftz=true`` to every compile, *after* the caller's options, so
float32 denormals would be flushed to zero on the GPU (``mul.ftz.f32``, ``add.ftz.f32``, ...) while
PyTorch's CUDA kernels and tensorlab's CPU backend keep them. So ``compile()`` runs NVRTC with our
options only (NVRTC's defaults: no flush-to-zero, IEEE division and square root), and the CuPy
driver loads the finished binary with ``cp.RawModule(path=...)``.

What ``compile()`` does for a source and its name expressions (template instantiations):
- the target: ``sm_XY`` of the device (a cubin) when this NVRTC supports that architecture,
  otherwise PTX for the newest ``compute_XY`` it supports below the device's, which the CUDA
  driver JIT-compiles at load (``target()``);
- the kernels' lowered (mangled) names from nvrtcGetLoweredName, which is what the module is
  searched for;
- a disk cache (``cache_dir()``: $TENSORLAB_CUBIN_CACHE, else $XDG_CACHE_HOME/tensorlab/cubin, else
  ~/.cache/tensorlab/cubin) keyed by the source text, the options (they carry the kernel headers'
  digest as a -D define and the include paths), the name expressions, the target and NVRTC's
  version. An entry is ``<key>.cubin`` (or ``.ptx``) and ``<key>.json`` (kind, lowered names, the
  binary's SHA-256). Each is written to a temporary file and renamed into place (os.replace),
  binary first, so concurrent processes and threads never see half a file. NVRTC's output is not
  byte-identical from one compile to the next (internal symbols carry a varying number), so two
  writers racing on one key may leave the binary of one and the index of the other: the hash does
  not match, which is a miss (compiled and stored again), as is a damaged file. Lowered names are
  the same in every compile, so a binary replaced between reading an entry and loading its file is
  still the right kernel.

NVRTC releases the GIL while it compiles and its programs are independent, so ``compile()`` can run
on many threads at once (modules.precompile does). ``cupy_backends``' NVRTC wrapper is imported on
first use only.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path
from typing import NamedTuple

from ... import _warn
from ...cache_dirs import user_cache_dir

CACHE_ENV = "TENSORLAB_CUBIN_CACHE"
_FORMAT = 1  # bump when the entry layout or anything compile() adds to the key changes


class CompileError(RuntimeError):
    """NVRTC rejected a source: names the source, the name expression(s), the target, and carries
    NVRTC's log (``.log``)."""

    def __init__(self, source, name_expressions, target, log):
        exprs = tuple(name_expressions)
        what = exprs[0] if len(exprs) == 1 else f"{len(exprs)} name expressions"
        super().__init__(f"compiling {source} ({what}) for {target} failed:\n{log.strip()}")
        self.source, self.name_expressions, self.target, self.log = source, exprs, target, log


class Compiled(NamedTuple):
    binary: bytes   # a cubin (ELF) or PTX text, as ``kind`` says
    kind: str       # "cubin" or "ptx"
    lowered: dict   # name expression -> lowered (mangled) kernel name
    path: Path | None  # the cached binary on disk (None when compiled with cache=False)
    log: str        # NVRTC's log of the compile (warnings; ptxas's report under --ptxas-options=-v)


def _lib():
    from cupy_backends.cuda.libs import nvrtc
    return nvrtc


@functools.lru_cache(maxsize=None)
def version():
    """NVRTC's (major, minor)."""
    return tuple(_lib().getVersion())


@functools.lru_cache(maxsize=None)
def supported_archs():
    """The SM versions this NVRTC can compile for (e.g. (50, 52, ..., 90, 100, 120))."""
    return tuple(sorted(int(a) for a in _lib().getSupportedArchs()))


def target(arch):
    """(the --gpu-architecture option, "cubin" | "ptx") for a device of compute capability `arch`
    (e.g. 90 or "90"): a cubin for sm_`arch` when NVRTC supports it, else PTX for the newest
    supported virtual architecture not above the device's (the driver JIT-compiles it)."""
    arch = int(arch)
    supported = supported_archs()
    if arch in supported:
        return f"--gpu-architecture=sm_{arch}", "cubin"
    older = [a for a in supported if a <= arch]
    if not older:
        raise RuntimeError(f"NVRTC {'.'.join(map(str, version()))} cannot compile for sm_{arch} "
                           f"(it supports {', '.join(map(str, supported))})")
    return f"--gpu-architecture=compute_{older[-1]}", "ptx"


# -- the CUDA runtime headers (cuda_fp16.h and cuda_bf16.h need them) ----------------------------------
def _header_major(include):
    """The CUDA major version of the runtime headers in `include`, or None."""
    try:
        text = (Path(include) / "cuda_runtime_api.h").read_text(errors="replace")
    except OSError:
        return None
    m = re.search(r"#define\s+CUDART_VERSION\s+(\d+)", text)
    return int(m.group(1)) // 1000 if m else None


def _runtime_include_candidates(major):
    try:
        import nvidia  # the NVIDIA wheels' namespace package
        bases = [Path(p) for p in getattr(nvidia, "__path__", ())]
    except ImportError:
        bases = []
    for base in bases:
        if major is not None:
            yield base / f"cu{major}" / "include"   # CUDA 13 on: one tree for every component
        yield base / "cuda_runtime" / "include"     # CUDA 12: nvidia-cuda-runtime-cu12
    try:  # what CuPy itself uses: site-packages, conda, CUDA_PATH/CUDA_HOME, system installs
        from cuda.pathfinder import find_nvidia_header_directory
        found = find_nvidia_header_directory("cudart")
    except Exception:
        found = None
    if found:
        yield Path(found)
    for var in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(var):
            yield Path(os.environ[var]) / "include"
    yield Path("/usr/local/cuda/include")


@functools.lru_cache(maxsize=None)
def runtime_include():
    """The directory holding cuda_runtime.h for this NVRTC, or None: the NVIDIA wheels
    (nvidia/cu13/include from CUDA 13 on, nvidia/cuda_runtime/include for CUDA 12), then what
    cuda.pathfinder (CuPy's dependency) finds, $CUDA_PATH, $CUDA_HOME and /usr/local/cuda. Headers of
    NVRTC's major version win over others."""
    try:
        major = version()[0]
    except Exception:
        major = None
    first = None
    for inc in _runtime_include_candidates(major):
        if not (inc / "cuda_runtime.h").is_file():
            continue
        if major is None or _header_major(inc) == major:
            return inc
        first = first or inc
    return first


# -- the disk cache ---------------------------------------------------------------------------------
def cache_dir():
    return user_cache_dir(CACHE_ENV, "cubin")


_fallback = None
_fallback_lock = threading.Lock()


def _fallback_dir(error):
    """A private temporary directory for this process when the cache directory is not writable (the
    driver still needs a file to load)."""
    global _fallback
    with _fallback_lock:
        if _fallback is None:
            import atexit
            _fallback = Path(tempfile.mkdtemp(prefix="tensorlab-cubin-"))
            atexit.register(shutil.rmtree, _fallback, True)
            _warn.warn(f"tensorlab: kernel cache {cache_dir()} is not writable ({error}); compiled kernels "
                       f"go to {_fallback} for this process only (set {CACHE_ENV})", RuntimeWarning)
        return _fallback


def cache_key(source_text, name_expressions, options, arch_option):
    h = hashlib.sha256()
    for part in (f"tensorlab-nvrtc-{_FORMAT}", ".".join(map(str, version())), arch_option, source_text,
                 *options, "\x01", *name_expressions):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:40]


def _write_atomic(path, data):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _load_entry(directory, key, name_expressions):
    """The cached Compiled for `key`, or None (absent, unreadable, or its binary does not match)."""
    try:
        entry = json.loads((directory / f"{key}.json").read_text())
        path = directory / entry["binary"]
        binary = path.read_bytes()
        lowered = entry["lowered"]
        if (entry.get("format") != _FORMAT or hashlib.sha256(binary).hexdigest() != entry["sha256"]
                or any(e not in lowered for e in name_expressions)):
            return None
        return Compiled(binary, entry["kind"], dict(lowered), path, entry.get("log", ""))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store_entry(directory, key, source_name, binary, kind, lowered, log):
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{key}.{kind}"
    _write_atomic(path, binary)
    entry = {"format": _FORMAT, "source": source_name, "kind": kind, "binary": path.name,
             "sha256": hashlib.sha256(binary).hexdigest(), "lowered": lowered, "log": log}
    _write_atomic(directory / f"{key}.json", json.dumps(entry, indent=1).encode())
    return path


# -- compiling ----------------------------------------------------------------------------------------
def _nvrtc_compile(source_text, name, name_expressions, options, kind):
    """One NVRTC program: (binary, {expression: lowered name}, log). Raises CompileError."""
    nvrtc = _lib()
    prog = nvrtc.createProgram(source_text, name, (), ())
    try:
        for expr in name_expressions:
            nvrtc.addNameExpression(prog, expr)
        try:
            nvrtc.compileProgram(prog, list(options))  # releases the GIL
        except nvrtc.NVRTCError as e:
            log = nvrtc.getProgramLog(prog) or str(e)
            arch = next((o.split("=", 1)[1] for o in options if o.startswith("--gpu-architecture=")), "?")
            raise CompileError(name, name_expressions, arch, log) from None
        lowered = {expr: nvrtc.getLoweredName(prog, expr) for expr in name_expressions}
        binary = nvrtc.getCUBIN(prog) if kind == "cubin" else nvrtc.getPTX(prog)
        if isinstance(binary, str):
            binary = binary.encode()
        return bytes(binary).rstrip(b"\0") if kind == "ptx" else bytes(binary), lowered, nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


def compile(source_path, name_expressions, options, arch, *, source=None, cache=True):  # noqa: A001
    """Compile `source_path` (text `source` when given, else read) with the template
    instantiations `name_expressions` and exactly `options` (plus --gpu-architecture for `arch`,
    the device's compute capability such as 90) -> Compiled(binary, kind, lowered, path, log).

    With `cache` (the default), a cached entry is returned without running NVRTC, and a fresh
    compile is stored. The options must carry whatever the key should see besides the source
    text: the CuPy driver's carry the kernel headers' digest (-DTENSORLAB_HEADERS_DIGEST=...).
    Raises CompileError (a RuntimeError) with NVRTC's log when the source does not compile."""
    path = Path(source_path)
    text = path.read_text() if source is None else source
    exprs = tuple(name_expressions)
    opts = tuple(options)
    arch_option, kind = target(arch)
    if any(o.startswith(("--gpu-architecture", "-arch")) for o in opts):
        raise ValueError(f"compile() adds the architecture itself; got {opts}")
    if cache:
        key = cache_key(text, exprs, opts, arch_option)
        hit = _load_entry(cache_dir(), key, exprs)
        if hit is None and _fallback is not None:
            hit = _load_entry(_fallback, key, exprs)
        if hit is not None:
            return hit
    binary, lowered, log = _nvrtc_compile(text, path.name, exprs, opts + (arch_option,), kind)
    stored = None
    if cache:
        try:
            stored = _store_entry(cache_dir(), key, path.name, binary, kind, lowered, log)
        except OSError as e:
            stored = _store_entry(_fallback_dir(e), key, path.name, binary, kind, lowered, log)
    return Compiled(binary, kind, lowered, stored, log)
