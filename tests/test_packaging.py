"""A plain `pip install .` must ship the CUDA kernel sources inside the package."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not (ROOT / "pyproject.toml").is_file(), reason="not a source checkout")
def test_pip_install_ships_kernels(tmp_path):
    target = tmp_path / "site"
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "build", "dist", "*.egg-info",
                                                             "__pycache__", ".pytest_cache", ".hypothesis"))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                           "--target", str(target), str(src)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    code = ("import tensorlab, tensorlab.kernels_path as k; d = k.kernel_dir(); "
            "print(tensorlab.__file__); print(d); print(len(k.kernel_sources()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    pkg_file, kdir, n = out.stdout.split()
    assert pkg_file.startswith(str(target))
    assert kdir.startswith(str(target)) and kdir.endswith("kernels")
    assert int(n) >= 1
    assert (Path(kdir) / "tensorlab" / "common.cuh").is_file()


def test_every_package_is_listed_in_pyproject():
    """A package missing from pyproject's list is absent from a non-editable install."""
    tomllib = pytest.importorskip("tomllib")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "tensorlab").rglob("__init__.py")}
    assert found <= listed, sorted(found - listed)
