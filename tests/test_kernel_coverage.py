"""Every kernel entry point (each name expression of tensorlab.kernel_table) was launched at least
once by the emulated test run, so every kernel and every dtype instantiation ran on CI.

How it works: backends/cuda/launch.py counts successful launches per (source, name expression)
in LAUNCHES. This test carries the `run_last` marker, which tests/conftest.py uses to move it
after every other collected test; it then compares the counts with the table. It is enforced only
under TENSORLAB_CUDA_EMULATION=1 and only when the whole tests/ directory was collected without
-k/--deselect (a partial run cannot cover every kernel); otherwise it is skipped."""
from __future__ import annotations

from pathlib import Path

import pytest

from tensorlab.backends.cuda.emulation import enabled
from tensorlab.kernel_table import KERNELS

TESTS = Path(__file__).resolve().parent


def _whole_suite(config):
    args = [Path(str(a).split("::")[0]).resolve() for a in config.args] or [Path.cwd().resolve()]
    everything = all(a == TESTS or a in TESTS.parents for a in args)
    return everything and not config.getoption("keyword", "") and not config.getoption("deselect", None)


@pytest.mark.cuda
@pytest.mark.run_last
def test_every_kernel_entry_point_was_launched(request):
    if not enabled():
        pytest.skip("kernel coverage is checked by the emulated run (TENSORLAB_CUDA_EMULATION=1)")
    if not _whole_suite(request.config):
        pytest.skip("kernel coverage is checked only when the whole test suite runs")
    from tensorlab.backends.cuda.launch import LAUNCHES
    missing = [f"{src}: {expr}" for src, exprs in KERNELS.items() for expr in exprs if (src, expr) not in LAUNCHES]
    assert not missing, (f"{len(missing)} kernel entry point(s) were never launched by the test suite; add a "
                         "device-parametrized test that reaches them (launch.wide_indexing() reaches the long long "
                         "instantiations):\n  " + "\n  ".join(missing))
