"""Shared by the pytest-benchmark suites in this directory: the board where test_kernels.py posts
each implementation's median, the ratios it derives (stored in the tensorlab row's extra_info as
soon as both sides of a pair have run, so they reach --benchmark-json/--benchmark-autosave), and
the terminal summary that prints them after pytest-benchmark's own tables."""
from __future__ import annotations

import pytest

_BOARD = pytest.StashKey()


class RatioBoard:
    """Medians per case (device, workload, size) and implementation. A ratio is baseline median /
    tensorlab median, as in the benchmark command's JSON: above 1, tensorlab is faster."""

    def __init__(self):
        self.cases = {}  # case -> {"label": text, "rows": {impl: (median_s, throughput, unit)}, "fixture": fx}

    def post(self, case, label, impl, median_s, throughput, unit, fixture):
        entry = self.cases.setdefault(case, {"label": label, "rows": {}, "fixture": None})
        entry["rows"][impl] = (median_s, throughput, unit)
        if impl == "tensorlab":
            entry["fixture"] = fixture
        ours = entry["rows"].get("tensorlab")
        fx = entry["fixture"]
        if ours is not None and fx is not None:
            fx.extra_info["ratios"] = {name: round(row[0] / ours[0], 4) for name, row in entry["rows"].items()
                                       if name != "tensorlab"}

    def lines(self):
        out = []
        for entry in self.cases.values():
            ours = entry["rows"].get("tensorlab")
            if ours is None:
                continue
            parts = [f"tensorlab {_fmt(ours[0])} ({ours[1]:.3g} {ours[2]})"]
            parts += [f"{name} {_fmt(row[0])} (x{row[0] / ours[0]:.2f})" for name, row in entry["rows"].items()
                      if name != "tensorlab"]
            out.append(f"{entry['label']:<44s} " + "   ".join(parts))
        return out


def _fmt(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:7.3f} {unit}"
    return f"{s / 1e-9:7.1f} ns"


@pytest.fixture(scope="session")
def ratio_board(pytestconfig):
    return pytestconfig.stash.setdefault(_BOARD, RatioBoard())


@pytest.hookimpl(trylast=True)  # after pytest-benchmark's tables
def pytest_terminal_summary(terminalreporter, config):
    board = config.stash.get(_BOARD, None)
    lines = board.lines() if board is not None else []
    if not lines:
        return
    terminalreporter.write_sep("-", "tensorlab vs baselines (test_kernels.py)")
    terminalreporter.write_line("median per call; (xN) = that library's median / tensorlab's: above 1, tensorlab "
                                "is faster (the benchmark command's `ratios`)")
    for line in lines:
        terminalreporter.write_line(line)
