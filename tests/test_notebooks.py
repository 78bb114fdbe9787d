"""Every notebook in examples/ runs to the end: executed with nbclient on the python3 kernel
(ipykernel), each in its own temporary directory, with a per-cell timeout; any cell error fails
the test. Without a GPU the notebooks' GPU cells run their CPU equivalent, so this runs in CI.

The GPU cells run too, in CI's emulated pass (`-m cuda` under `python -m
tensorlab.backends.cuda.emulation`, docs/cuda-emulation.md): TENSORLAB_NOTEBOOK_DEVICE=cuda makes a
notebook take its GPU branches without a GPU, and under the emulation driver it shrinks its sizes.
The kernel subprocess inherits the launcher's environment (TENSORLAB_CUDA_EMULATION, and
LD_PRELOAD/ASAN_OPTIONS for the AddressSanitizer-built kernels)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))
CELL_TIMEOUT_S = 120
# under the emulation a cell may build a kernel source with g++ and ASan first (minutes when the
# build cache is cold, docs/cuda-emulation.md)
EMULATED_CELL_TIMEOUT_S = 600
DEVICE_ENV = "TENSORLAB_NOTEBOOK_DEVICE"

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

# What only the GPU branch of a cell prints, per notebook with GPU cells and per cell id. The other
# notebooks are device-independent: they have no GPU branch for the override to take.
GPU_ONLY_OUTPUT = {
    "sync_and_timing_pitfalls": {
        "sync-and-tim-01": ["GPU: "],
        "sync-and-tim-05": ["CUDA events, after end.synchronize():", "Stopwatch('cuda') using cuda_event"],
        "sync-and-tim-06": ["refused: Stopwatch: the start event was recorded on"],
        "sync-and-tim-08": ["Measurement on cuda:0"],
        "sync-and-tim-10": ["20 host/device synchronizations", "20x", "1 host/device synchronization,"],
        "sync-and-tim-12": ["pageable: .to('cuda', non_blocking=True) returned after",
                            "pinned: .to('cuda', non_blocking=True) returned after"],
        "sync-and-tim-12a": ["3 host/device synchronizations", "copy to cuda", "copy to cpu",
                             "synchronize (explicit)", "back is pinned: True | round trip intact: True",
                             "blocking upload in 'error' mode: called a synchronizing CUDA operation: copy to cuda"],
        "sync-and-tim-13": ["read after synchronize:  7.0"],
        "sync-and-tim-15": ["clipped_update: caught - called a synchronizing CUDA operation: bool on cuda:0",
                            "clipped_update_no_sync: no implicit sync"],
        "sync-and-tim-19": ["Measurement on cuda:0"],
        "sync-and-tim-20b": ["Self CUDA time total:", "host wait in a loop", "for 'item'"],
    },
}
# what the CPU branches print (and no GPU branch does)
CPU_ONLY_OUTPUT = ("no gpu here", "on a gpu")


def _execute(path, tmp_path, monkeypatch, timeout):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    # the kernel inherits this environment: make this checkout importable even when not installed
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell and the traceback, on any error
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", ())
              if o.get("output_type") == "error"]
    assert not errors
    assert list(tmp_path.iterdir()) == [], "a notebook left files behind"
    return nb


def _text(cell):
    """Everything a code cell printed or displayed, as one string."""
    parts = []
    for o in cell.get("outputs", ()):
        if o.get("output_type") == "stream":
            parts.append(o.get("text", ""))
        elif "data" in o:
            parts.append(o["data"].get("text/plain", ""))
    return "".join(parts)


def test_the_four_notebooks_are_there():
    names = {p.stem for p in NOTEBOOKS}
    assert {"sync_and_timing_pitfalls", "views_and_strides", "zombie_tensor", "nan_debugging"} <= names


def test_notebooks_with_gpu_cells_take_the_device_override():
    # a notebook with GPU branches reads the override in its first code cell and is checked below
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        sources = [c.source for c in nb.cells if c.cell_type == "code"]
        has_gpu_cells = any("ON_GPU" in s for s in sources)
        assert has_gpu_cells == (path.stem in GPU_ONLY_OUTPUT), path.name
        if has_gpu_cells:
            assert DEVICE_ENV in sources[0], f"{path.name}: the first code cell does not read {DEVICE_ENV}"
            ids = {c.id for c in nb.cells if c.cell_type == "code"}
            assert set(GPU_ONLY_OUTPUT[path.stem]) <= ids, f"{path.name}: cell ids changed"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_to_the_end(path, tmp_path, monkeypatch):
    monkeypatch.delenv(DEVICE_ENV, raising=False)  # the machine decides: GPU cells on a GPU, else the CPU's
    nb = _execute(path, tmp_path, monkeypatch, CELL_TIMEOUT_S)
    from tensorlab import backends
    if path.stem in GPU_ONLY_OUTPUT and not backends.cuda_emulated() and backends.cuda_unavailable_reason():
        # the "Why:" line is the one diagnosis (tensorlab/backends/diagnosis.py), as the kernel process sees it
        first = _text(next(c for c in nb.cells if c.cell_type == "code"))
        assert f"Why: {backends.cuda_unavailable_reason()}\n" in first, first


@pytest.mark.cuda
@pytest.mark.parametrize("path", [ROOT / "examples" / f"{name}.ipynb" for name in GPU_ONLY_OUTPUT],
                         ids=lambda p: p.stem)
def test_gpu_cells_run_on_the_cuda_device(path, cuda, tmp_path, monkeypatch):
    """The GPU branches, forced on: on a real GPU they run anyway; under the emulation driver
    (TENSORLAB_CUDA_EMULATION=1, where tl.cuda.is_available() is False) only the override takes them."""
    from tensorlab import backends

    monkeypatch.setenv(DEVICE_ENV, "cuda")
    nb = _execute(path, tmp_path, monkeypatch,
                  EMULATED_CELL_TIMEOUT_S if backends.cuda_emulated() else CELL_TIMEOUT_S)
    out = {c.id: _text(c) for c in nb.cells if c.cell_type == "code"}
    cpu_branches = {cid: s for cid, s in out.items() if any(m in s.lower() for m in CPU_ONLY_OUTPUT)}
    assert not cpu_branches, f"cells took their CPU branch: {sorted(cpu_branches)}"
    for cid, wanted in GPU_ONLY_OUTPUT[path.stem].items():
        missing = [w for w in wanted if w not in out[cid]]
        assert not missing, f"cell {cid} did not print {missing}; it printed:\n{out[cid]}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_with_the_outputs_of_one_run(path):
    """A reader sees what each cell does without running it: every code cell of the committed notebook ran
    in one recorded run (examples/refresh_notebooks.py stores them) and most show output."""
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), "run examples/refresh_notebooks.py and commit the outputs"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "the stored outputs come from several runs: refresh them"
    assert sum(bool(c.get("outputs")) for c in code) >= len(code) - 1
    assert nb.metadata.get("tensorlab", {}).get("outputs_from") == "examples/refresh_notebooks.py"
