"""The README's "what is supported" table is what `python -m tensorlab.compat --support-table` prints
(and docs/compat-support.md what --write writes), so a branch that adds a name and does not
regenerate them fails here; the committed torch name list is what the installed torch has; --check
reports the torch names a script spells that tensorlab lacks, and only those."""
from __future__ import annotations

import json
import os

from test_compat_runner import ROOT, _run

SUPPORT = os.path.join(ROOT, "tensorlab", "compat")
REGEN = "regenerate with: python -m tensorlab.compat --support-table --write"


def _generated(*flags):
    res = _run(["--support-table", *flags], cwd=ROOT)
    assert res.returncode == 0, res.stderr
    return res.stdout


def test_readme_table_is_the_generated_one():
    from tensorlab.compat.support import readme_section
    with open(os.path.join(ROOT, "README.md")) as f:
        section = readme_section(f.read())
    assert section is not None, "README.md lost the support-table markers"
    assert section == _generated(), REGEN


def test_full_listing_is_the_generated_one():
    full = _generated("--full")
    with open(os.path.join(ROOT, "docs", "compat-support.md")) as f:
        doc = f.read()
    assert doc.endswith(full), REGEN
    assert doc.startswith("# What `python -m tensorlab.compat` supports")
    # the table's counts agree with the full listing's missing names
    for line in full.splitlines():
        if line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            n, have, missing = int(cells[1]), int(cells[2].split()[0]), cells[3]
            assert n - have == (0 if missing == "-" else missing.count("`") // 2), line


def test_table_counts_match_the_committed_torch_names():
    with open(os.path.join(SUPPORT, "torch_names.json")) as f:
        names = json.load(f)
    table = _generated()
    for line in table.splitlines():
        if line.startswith("| `"):
            pkg = line.split("`")[1]
            assert int(line.split("|")[2]) == len(names[pkg]), line
    assert "torch.nn.Linear" not in table and "`Linear`" not in table  # tensorlab has it: not listed missing


def test_committed_torch_names_are_the_installed_torchs(torch, tmp_path):
    out = tmp_path / "names.json"
    res = _run(["-m", "tensorlab.compat.support", "--dump-torch-names", str(out)], compat=False, cwd=str(tmp_path))
    assert res.returncode == 0, res.stderr
    with open(os.path.join(SUPPORT, "torch_names.json")) as f:
        committed = json.load(f)
    assert json.loads(out.read_text()) == committed, \
        "torch's names changed: python -m tensorlab.compat.support --dump-torch-names, then " + REGEN
    assert "Linear" in committed["torch.nn"] and "AliasDb" not in committed["torch"]  # TorchScript internals left out


def test_check_reports_the_missing_names_a_script_spells(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(
        "import torch\nimport torch.nn as nn\nfrom torch.nn import functional as F\n"
        "from torch.optim import Adam, NoSuchOptimizer\nimport torch.utils.no_such_package as nsp\n"
        "model = nn.Sequential(nn.Linear(2, 2), nn.NoSuchLayer())\n"
        "y = F.relu(torch.ones(2)) + torch.no_such_fn(3)\n"
        "nsp.export(model, y, 'm.onnx')\n"
        "mask = nn.Transformer.generate_square_subsequent_mask(3)\n"
        "z = y.not_known_statically() + y.q_per_channel_axis() + len({}.values())\n")
    res = _run(["--check", str(script)], cwd=str(tmp_path))
    assert res.returncode == 1, res.stderr
    import tensorlab
    expected = [f"{script}: torch.nn.NoSuchLayer", f"{script}: torch.no_such_fn",
                f"{script}: torch.optim.NoSuchOptimizer", f"{script}: torch.utils.no_such_package.export"]
    if not hasattr(tensorlab.Tensor, "q_per_channel_axis"):  # a torch.Tensor method, looked up statically
        expected.append(f"{script}: Tensor.q_per_channel_axis (if called on a tensor)")
    assert res.stdout.splitlines() == expected
    fine = tmp_path / "fine.py"
    fine.write_text("import torch\nfrom torch import nn\nx = nn.Linear(2, 2)(torch.zeros(1, 2)).sum()\n")
    res = _run(["--check", str(fine)], cwd=str(tmp_path))
    assert res.returncode == 0 and res.stdout == "every torch name these scripts spell resolves\n"
