"""A plain `pip install .` must ship the CUDA kernel sources inside the package."""
from __future__ import annotations

import os
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


def test_the_distribution_has_a_name_of_its_own():
    """The index's `tensorlab` is an unrelated 2018 project: no install line may name it."""
    tomllib = pytest.importorskip("tomllib")
    from tensorlab.backends import diagnosis
    name = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert name == diagnosis.DIST_NAME == "tensorlab-rt"
    assert os.path.samefile(diagnosis.DIST, ROOT)  # run from this checkout: hints install the checkout
    text = (ROOT / "README.md").read_text()
    for bad in ("pip install tensorlab ", "pip install tensorlab\n", "'tensorlab[", '"tensorlab['):
        assert bad not in text, bad


def _fake_python(tmp_path, refuse):
    """A python3 that refuses what a stock Debian python3 refuses: `-m venv` without ensurepip (and,
    with refuse='all', `-m pip` too), forwarding everything else to this interpreter."""
    fake = tmp_path / "python3"
    pip_rule = 'if [ "$1 $2" = "-m pip" ]; then echo "No module named pip" >&2; exit 1; fi' if refuse == "all" else ""
    fake.write_text(f"""#!/bin/bash
if [ "$1 $2" = "-m venv" ] && [ "$3" != "--without-pip" ]; then
    echo "The virtual environment was not created successfully because ensurepip is not available." >&2; exit 1
fi
{pip_rule}
exec {sys.executable} "$@"
""")
    fake.chmod(0o755)
    return fake


def _make_venv(tmp_path, fake):
    script = f". {ROOT}/.ci/venv.sh && project_venv {tmp_path}/venv && python -m pip --version && which python"
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHON": str(fake), "HOME": str(tmp_path)})


@pytest.mark.skipif(not (ROOT / ".ci" / "venv.sh").is_file(), reason="not a source checkout")
def test_venv_without_ensurepip_is_filled_by_the_system_pip(tmp_path):
    proc = _make_venv(tmp_path, _fake_python(tmp_path, "venv"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip().endswith(f"{tmp_path}/venv/bin/python")
    assert (tmp_path / "venv" / "bin" / "pip").exists()


@pytest.mark.skipif(not (ROOT / ".ci" / "venv.sh").is_file(), reason="not a source checkout")
def test_no_venv_and_no_pip_says_which_package_to_install(tmp_path):
    proc = _make_venv(tmp_path, _fake_python(tmp_path, "all"))
    assert proc.returncode != 0
    assert "sudo apt install python3-venv" in proc.stderr
    assert not (tmp_path / "venv").exists()
