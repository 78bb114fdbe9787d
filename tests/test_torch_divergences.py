"""The divergence table (tests/torch_divergences.py): every row's tensorlab behaviour holds on every
device, the docs show exactly the table, and each path-dependent row really corrects the oracle."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

import torch_divergences as D

DOC = Path(__file__).resolve().parents[1] / "docs" / "torch-divergences.md"


@pytest.mark.parametrize("row", D.DIVERGENCES, ids=lambda d: d.check.__name__.strip("_"))
def test_tensorlab_side_of_every_row(device, row):
    row.check(device)


def test_docs_show_the_table():
    assert DOC.read_text() == D.render(), "regenerate: python tests/torch_divergences.py > docs/torch-divergences.md"


def test_rows_are_complete():
    for d in D.DIVERGENCES:
        assert d.kind in (D.PATH_DEPENDENT, D.DELIBERATE)
        assert all((d.op, d.inputs, d.torch, d.ours, d.why)), d
        assert (d.corrects is None) == (d.right is None), d
        if d.kind == D.PATH_DEPENDENT:  # the oracle tests must not trust torch there
            assert d.corrects is not None, d


def test_oracle_replaces_a_path_dependent_answer(torch):
    x = torch.tensor([math.inf, 1.0, math.inf])
    fn = torch.nn.functional.gelu
    wrong = torch.tensor([math.nan, 0.8413, math.nan])  # what torch's vectorized path gives on some CPUs
    fixed = D.oracle(torch, "gelu", {}, fn, (x,), wrong)
    assert fixed[0].item() == math.inf and fixed[2].item() == math.inf and abs(fixed[1].item() - 0.8413) < 1e-6
    assert D.oracle(torch, "relu", {}, fn, (x,), wrong) is wrong  # no row applies: torch's answer unchanged
