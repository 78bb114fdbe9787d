"""Every notebook in examples/ runs to the end: executed with nbclient on the python3 kernel
(ipykernel), each in its own temporary directory, with a per-cell timeout; any cell error fails
the test. Without a GPU the notebooks' GPU cells run their CPU equivalent, so this runs in CI."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))
CELL_TIMEOUT_S = 120

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")


def test_the_four_notebooks_are_there():
    names = {p.stem for p in NOTEBOOKS}
    assert {"sync_and_timing_pitfalls", "views_and_strides", "zombie_tensor", "nan_debugging"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_to_the_end(path, tmp_path, monkeypatch):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    # the kernel inherits this environment: make this checkout importable even when not installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell and the traceback, on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", ())
              if o.get("output_type") == "error"]
    assert not errors
    assert list(tmp_path.iterdir()) == [], "a notebook left files behind"
