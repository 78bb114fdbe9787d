"""Smoke test of an installed wheel, run from outside the checkout by .ci/run: the package imports
from site-packages (not the checkout), ships every kernel and emulation source, computes, and says
why CUDA is missing. Usage: python smoke.py CHECKOUT SDIST"""
import sys
import tarfile
from pathlib import Path

import tensorlab as tl
import tensorlab.kernels_path as kp
from tensorlab import backends

checkout, sdist = Path(sys.argv[1]).resolve(), Path(sys.argv[2])
pkg = Path(tl.__file__).resolve().parent
assert checkout not in pkg.parents, f"tensorlab imported from the checkout ({pkg}), not the wheel"
assert "site-packages" in pkg.parts, pkg

kernels = sorted(p.relative_to(checkout).as_posix() for p in (checkout / "kernels").rglob("*") if p.is_file()
                 and p.suffix in (".cu", ".cuh"))
emulation = sorted(p.relative_to(checkout).as_posix()
                   for p in (checkout / "tensorlab/backends/cuda/emulation").rglob("*")
                   if p.is_file() and p.suffix in (".cpp", ".h"))
shipped = Path(kp.kernel_dir())
missing = [k for k in kernels if not (shipped / Path(k).relative_to("kernels")).is_file()]
missing += [e for e in emulation if not (pkg.parent / e).is_file()]
missing += [f for f in ("py.typed", "__init__.pyi", "tensor.pyi") if not (pkg / f).is_file()]  # PEP 561
assert not missing, f"not in the wheel: {missing}"

with tarfile.open(sdist) as tar:
    names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
absent = [f for f in kernels + emulation + ["pyproject.toml", "README.md"] if f not in names]
assert not absent, f"not in the sdist: {absent}"

x = tl.arange(6.0).reshape(2, 3)
assert (x.t() @ x).tolist() == [[9.0, 12.0, 15.0], [12.0, 17.0, 22.0], [15.0, 22.0, 29.0]]
reason = backends.cuda_unavailable_reason()
from tensorlab.backends import diagnosis  # noqa: E402
# install hints name the wheel pip installed (its PEP 610 provenance), never a package on the index
assert diagnosis.DIST.endswith(".whl") and Path(diagnosis.DIST).is_file(), diagnosis.DIST
assert "tensorlab-rt[" not in (reason or ""), reason
# the wheel carries the compiled hot path (setup.py, CI has Cython and a compiler) and its .py sources,
# which TENSORLAB_PURE_PYTHON=1 loads instead
from tensorlab import _build  # noqa: E402
assert _build.compiled, _build.modules()
assert all((pkg.parent / (m.replace(".", "/") + ".py")).is_file() for m in _build.HOT_PATH), "sources not shipped"
import os, subprocess  # noqa: E401,E402
pure = subprocess.run([sys.executable, "-c", "import tensorlab, tensorlab._build as b; print(b.compiled, b.modules())"],
                      env={**os.environ, "TENSORLAB_PURE_PYTHON": "1"}, capture_output=True, text=True, check=True)
assert pure.stdout.startswith("False"), pure.stdout
print(f"smoke: tensorlab {tl.__version__} from {pkg} ({_build.describe()}); "
      f"{len(kernels)} kernel sources and {len(emulation)} emulation sources shipped in the wheel and the sdist; "
      f"CUDA: {reason or 'available'}")
