"""Compiling for the emulation: the runtime (runtime.cpp) and each kernels/*.cu with its name
expressions, by the system C++ compiler, into shared libraries cached on disk.

A kernel library is one generated translation unit per chunk of name expressions (compiled in
parallel, then linked): the chunk #includes the kernel source after the force-included CUDA
built-ins (include/tl_emulation.h), then include/tl_emulation_entry.h, then two extern "C"
functions per name expression (tl_entry_<i> runs a grid, tl_sig_<i> describes the parameters).
The cache key hashes the compiler's version, the flags, the generated code and every header and
source involved, so editing a kernel or a header rebuilds exactly what it affects."""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path

from ....kernels_path import kernel_dir
from ....cache_dirs import user_cache_dir

HERE = Path(__file__).resolve().parent
INCLUDE = HERE / "include"
RUNTIME = HERE / "runtime.cpp"

ASAN_ENV = "TENSORLAB_CUDA_EMULATION_ASAN"  # "0": build without AddressSanitizer (no bounds checks)
CACHE_ENV = "TENSORLAB_CUDA_EMULATION_CACHE"
# halt_on_error=0 with -fsanitize-recover: a bad access is reported to the runtime's callback and
# fails that launch (and test) instead of killing the process; suppress_equal_pcs=0 so a second
# bad access at the same instruction (another test) is reported again.
ASAN_OPTIONS = "detect_leaks=0:halt_on_error=0:suppress_equal_pcs=0:detect_odr_violation=0:allocator_may_return_null=1"

_BASE_FLAGS = ("-std=gnu++20", "-O1", "-g", "-fPIC", "-ffp-contract=off", "-fno-strict-aliasing")
_ASAN_FLAGS = ("-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer", "-DTL_EMU_ASAN=1")
CHUNK = 48  # name expressions per translation unit: small enough to compile in parallel


class CompileError(RuntimeError):
    pass


def cxx():
    return os.environ.get("CXX") or "g++"


@lru_cache(maxsize=None)
def compiler_id():
    try:
        out = subprocess.run([cxx(), "--version"], capture_output=True, text=True, env=compiler_env(), check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        raise CompileError(f"the CUDA emulation needs a C++20 compiler ({cxx()!r}, set CXX to choose another): {e}")
    return out.stdout.splitlines()[0] if out.stdout else cxx()


def asan_wanted():
    return os.environ.get(ASAN_ENV, "1") != "0"


def _compiler_file(name):
    try:
        out = subprocess.run([cxx(), f"-print-file-name={name}"], capture_output=True, text=True, env=compiler_env())
    except OSError:
        return None
    p = out.stdout.strip()
    return os.path.realpath(p) if os.path.isabs(p) and os.path.exists(p) else None


def libasan_path():
    """The AddressSanitizer runtime matching the compiler (for LD_PRELOAD), or None."""
    return _compiler_file("libasan.so")


def asan_environment(env=None):
    """`env` (default os.environ) plus what an emulated run needs: the emulation switched on,
    libasan preloaded (an instrumented library can only be loaded into a process that starts with
    the ASan runtime), and ASan's options."""
    env = dict(os.environ if env is None else env)
    env["TENSORLAB_CUDA_EMULATION"] = "1"
    if env.get(ASAN_ENV, "1") != "0":
        lib = libasan_path()
        if lib is None:
            raise CompileError(f"{cxx()} has no AddressSanitizer runtime (libasan.so); install it, or set "
                               f"{ASAN_ENV}=0 to run the emulation without bounds checks")
        # libstdc++ right after it: ASan resolves the real __cxa_throw when it starts, and C++ code
        # loaded later (torch, the test oracle) would otherwise throw through a null pointer
        libs = [lib] + [p for p in (_compiler_file("libstdc++.so.6"),) if p]
        pre = env.get("LD_PRELOAD", "").split()
        env["LD_PRELOAD"] = " ".join(libs + [p for p in pre if p not in libs])
        env["ASAN_OPTIONS"] = ":".join(o for o in (ASAN_OPTIONS, env.get("ASAN_OPTIONS", "")) if o)
    return env


def compiler_env():
    """The compiler runs without the preloaded sanitizer runtime of this process."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def cache_dir():
    return user_cache_dir(CACHE_ENV, "cuda-emulation")


def flags(asan):
    return _BASE_FLAGS + (_ASAN_FLAGS if asan else ())


def _digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def _tree_bytes(*dirs_and_globs):
    out = []
    for d, pattern in dirs_and_globs:
        for p in sorted(Path(d).glob(pattern)):
            out.append(p.name.encode() + b"\0" + p.read_bytes())
    return b"".join(out)


def _run(cmd, what):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=compiler_env())
    if proc.returncode != 0:
        raise CompileError(f"CUDA emulation: compiling {what} failed ({' '.join(cmd[:3])} ...):\n{proc.stderr[-6000:]}")


def _publish(tmp, final):
    final.parent.mkdir(parents=True, exist_ok=True)
    os.replace(tmp, final)  # atomic: concurrent builders (pytest-xdist) never see half a library


def runtime_library(asan):
    """Path of the compiled runtime, building it on first use."""
    fl = flags(asan)
    key = _digest("runtime", compiler_id(), fl, RUNTIME.read_bytes())
    path = cache_dir() / f"libtlemu-{key}.so"
    if not path.exists():
        with tempfile.TemporaryDirectory(dir=_ensure(cache_dir())) as tmp:
            out = Path(tmp) / path.name
            _run([cxx(), *fl, "-shared", str(RUNTIME), "-o", str(out)], "the emulation runtime")
            _publish(out, path)
    return path


def _ensure(d):
    d.mkdir(parents=True, exist_ok=True)
    return d


def _user_options(options):
    """The NVRTC options that mean something to the host compiler: -I and -D."""
    out = []
    for o in options:
        if o.startswith(("-I", "-D", "--include-path=", "--define-macro=")):
            out.append(o.replace("--include-path=", "-I").replace("--define-macro=", "-D"))
    return tuple(out)


def _translation_unit(source, exprs, first):
    # The kernel source goes inside an anonymous namespace: its template instantiations then have
    # internal linkage, so their static __shared__ arrays are not COMDAT and AddressSanitizer puts
    # redzones around them (it skips COMDAT globals). Standard and CUDA headers are already
    # included (tl_emulation.h), so their include guards keep them out of the namespace.
    lines = ["namespace {", f'#include "{source}"', "}  // namespace", '#include "tl_emulation_entry.h"']
    for i, e in enumerate(exprs, first):
        lines.append(f'extern "C" __attribute__((visibility("default"))) int tl_entry_{i}(const unsigned* d, size_t s, '
                     f'void** a, char* err, size_t cap) {{ return tl_emu::launch(&{e}, d, s, a, err, cap); }}')
        lines.append(f'extern "C" __attribute__((visibility("default"))) int tl_sig_{i}(int* k, int* z, int cap) '
                     f'{{ return tl_emu::signature(&{e}, k, z, cap); }}')
    return "\n".join(lines) + "\n"


def kernel_library(source_path, name_expressions, options, asan):
    """Path of the shared library holding `name_expressions` of one kernel source, building it
    (chunks in parallel) unless the cache has it. Entry i corresponds to name_expressions[i]."""
    source_path = Path(source_path).resolve()
    exprs = tuple(name_expressions)
    fl = flags(asan) + ("-fvisibility=hidden",) + _user_options(options)
    includes = ("-include", "tl_emulation.h", f"-I{INCLUDE}", f"-I{kernel_dir()}")
    chunks = [(i, exprs[i:i + CHUNK]) for i in range(0, len(exprs), CHUNK)] or [(0, ())]
    units = [_translation_unit(source_path, part, first) for first, part in chunks]
    key = _digest("kernels", compiler_id(), fl, includes, *units, source_path.read_bytes(),
                  _tree_bytes((INCLUDE, "*.h"), (kernel_dir() / "tensorlab", "*.cuh")),
                  _tree_bytes((source_path.parent, "*.cuh")))
    path = cache_dir() / f"{source_path.stem}-{key}.so"
    if path.exists():
        return path
    with tempfile.TemporaryDirectory(dir=_ensure(cache_dir())) as tmp:
        tmp = Path(tmp)
        objs = []
        jobs = []
        for n, unit in enumerate(units):
            cpp = tmp / f"unit{n}.cpp"
            cpp.write_text(unit)
            obj = tmp / f"unit{n}.o"
            objs.append(str(obj))
            jobs.append([cxx(), *fl, *includes, "-c", str(cpp), "-o", str(obj)])
        workers = max(1, min(len(jobs), os.cpu_count() or 1))
        with ThreadPoolExecutor(workers) as pool:
            for f in [pool.submit(_run, j, source_path.name) for j in jobs]:
                f.result()
        out = tmp / path.name
        _run([cxx(), *fl, "-shared", *objs, "-o", str(out)], source_path.name)
        _publish(out, path)
    return path


def clear_cache():
    shutil.rmtree(cache_dir(), ignore_errors=True)
