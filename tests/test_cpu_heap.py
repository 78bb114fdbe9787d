"""backends/cpu/heap.py: glibc's malloc settings at import, and the ways a user keeps their own."""
import os
import subprocess
import sys

import pytest

from tensorlab.backends.cpu import heap

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")


def _tuned(env_extra):
    env = {k: v for k, v in os.environ.items() if k not in heap._ENV and k != "GLIBC_TUNABLES"}
    env.update(env_extra)
    out = subprocess.run([sys.executable, "-c", "import tensorlab.backends.cpu.heap as h; print(h.tuned)"],
                         env=env, capture_output=True, text=True, timeout=120, cwd=os.getcwd())
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_tuned_at_import_and_idempotent():
    assert _tuned({}) == "True"
    if heap.tuned:
        assert heap.tune() is True


@pytest.mark.parametrize("env", [{"TENSORLAB_KEEP_MALLOC": "1"}, {"MALLOC_MMAP_THRESHOLD_": "65536"},
                                 {"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1"}])
def test_a_users_own_malloc_settings_are_kept(env):
    assert _tuned(env) == "False"
