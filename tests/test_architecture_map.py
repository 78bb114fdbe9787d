"""docs/ARCHITECTURE.md's "Where to find an op" table stays true: every file it names exists (front end,
CPU and CUDA primitive, kernel source, derivative file), each family's front end registers ops or
defines functions, and every derivatives_<family>.py in tensorlab/autograd/ is in the table."""
from __future__ import annotations

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
# the folder each column's relative paths are in (the family column names no path)
FOLDERS = (None, "tensorlab/ops", "tensorlab/backends/cpu", "tensorlab/backends/cuda", "kernels", "tensorlab/autograd")


def _rows():
    with open(DOC) as f:
        text = f.read()
    section = text.split("## Where to find an op", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| ") or line.startswith("| family") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == len(FOLDERS), f"a row of {len(FOLDERS)} cells expected: {line}"
        rows.append(cells)
    return rows


def _paths(cell, folder):
    """The files a cell names: comma-separated, a parenthesis is a remark, '-' is none."""
    out = []
    for part in cell.split(","):
        part = re.sub(r"\(.*?\)", "", part).strip()
        if not part or part == "-":
            continue
        repo_relative = part.startswith("tensorlab/") and folder != "kernels"  # kernels/tensorlab/*.cuh: relative
        out.append(part if repo_relative else f"{folder}/{part}")
    return out


def test_the_table_has_the_families():
    rows = _rows()
    names = [r[0] for r in rows]
    assert len(rows) >= 20 and len(set(names)) == len(names), names


def test_every_listed_path_exists():
    missing = []
    for row in _rows():
        for cell, folder in zip(row[1:], FOLDERS[1:]):
            for path in _paths(cell, folder):
                if not os.path.isfile(os.path.join(ROOT, path)):
                    missing.append(f"{row[0]}: {path}")
    assert not missing, f"docs/ARCHITECTURE.md 'Where to find an op' names files that do not exist: {missing}"


def test_every_derivative_file_is_listed():
    listed = set()
    for row in _rows():
        listed.update(os.path.basename(p) for p in _paths(row[5], FOLDERS[5]))
    present = {f for f in os.listdir(os.path.join(ROOT, "tensorlab", "autograd"))
               if f.startswith("derivatives_") and f.endswith(".py")}
    assert present <= listed, f"derivative files missing from the table: {sorted(present - listed)}"


def test_front_ends_hold_their_ops():
    """Each front-end module named in the table defines public functions (FUNCTIONS), Tensor methods
    (METHODS) or registry rows."""
    import importlib

    empty = []
    for row in _rows():
        for path in _paths(row[1], FOLDERS[1]):
            name = path[:-3].replace("/", ".")
            m = importlib.import_module(name)
            declared = any(getattr(m, attr, None) for attr in ("FUNCTIONS", "METHODS", "ROWS", "__all__"))
            own = any(callable(v) and getattr(v, "__module__", None) == name and not k.startswith("_")
                      for k, v in vars(m).items())
            if not (declared or own):
                empty.append(f"{row[0]}: {path}")
    assert not empty, f"front ends with no ops of their own: {empty}"


def test_onnx_families_map_disjoint_ops():
    """onnx/_symbolic.py merges one HOOK table per family file: no op may be mapped by two of them."""
    from tensorlab.onnx import (_symbolic, _symbolic_elementwise, _symbolic_linalg, _symbolic_reduction,
                                _symbolic_shape)

    tables = [m.HOOK for m in (_symbolic_elementwise, _symbolic_shape, _symbolic_reduction, _symbolic_linalg)]
    assert sum(len(t) for t in tables) == len(_symbolic.HOOK)
