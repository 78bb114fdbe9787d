"""The compiled hot path and its pure-Python fallback (tensorlab/_build.py, setup.py): which build
runs is reported, TENSORLAB_PURE_PYTHON=1 loads the .py sources even where compiled modules exist,
and both builds give the same answers (the core tests run on both in .ci/run)."""
import importlib.machinery
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import tensorlab as tl
from tensorlab import _build

ROOT = Path(tl.__file__).resolve().parent.parent

_PROBE = ("import json, warnings; warnings.simplefilter('ignore'); import numpy as np, tensorlab as tl, tensorlab._build as b; "
          "x = tl.tensor(np.arange(24, dtype=np.float32)).view(2, 3, 4); "
          "y = tl.stack([x[1, None].T.sum(-1), tl.broadcast_to(x[0, :, :1], (3, 4)).T.contiguous()], 1); "
          "print(json.dumps({'modules': b.modules(), 'stale': sorted(b.STALE), 'compiled': b.compiled, 'describe': b.describe(), "
          "'files': {m: __import__('sys').modules[m].__file__ for m in b.HOT_PATH}, 'y': y.tolist(), "
          "'shape': list(y.shape), 'bs': list(tl.broadcast_shapes((8, 1, 4), (5, 1)))}))")


def _probe(value):
    import json
    env = {k: v for k, v in os.environ.items() if k != _build.ENV}
    if value is not None:
        env[_build.ENV] = value
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_hot_path_modules_are_imported_and_reported():
    mods = _build.modules()
    assert set(mods) == set(_build.HOT_PATH)  # `import tensorlab` imports every one of them
    assert _build.compiled == all(mods.values())
    for name, compiled in mods.items():
        f = sys.modules[name].__file__
        assert f.endswith(".py") != compiled, (name, f)
    assert isinstance(_build.describe(), str) and "hot path" in _build.describe()


def test_pure_python_switch_loads_the_sources():
    pure = _probe("1")
    assert pure["compiled"] is False and not any(pure["modules"].values())
    assert all(f.endswith(".py") for f in pure["files"].values()), pure["files"]
    assert _build.ENV in pure["describe"]
    # a comma list loads just those modules from source
    one = _probe(_build.HOT_PATH[0])
    assert one["files"][_build.HOT_PATH[0]].endswith(".py")


def test_both_builds_compute_the_same():
    pure, default = _probe("1"), _probe(None)
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    want = np.stack([x[1, None].T.sum(-1), np.broadcast_to(x[0, :, :1], (3, 4)).T], 1)
    for r in (pure, default):
        assert r["shape"] == list(want.shape) and np.array_equal(np.array(r["y"], dtype=np.float32), want)
        assert r["bs"] == [8, 5, 4]
    # where setup.py built the extensions next to the sources, the default import runs them
    built = {m: any((ROOT / m.replace(".", "/")).with_name(Path(m.replace(".", "/")).name + s).exists()
                    for s in importlib.machinery.EXTENSION_SUFFIXES) for m in _build.HOT_PATH}
    # (an extension older than its edited source is not loaded: _build.STALE)
    assert default["modules"] == {m: v and m not in default["stale"] for m, v in built.items()}


def test_setup_reads_the_one_module_list():
    ns = {"__name__": "not_main", "__file__": str(ROOT / "setup.py")}
    src = (ROOT / "setup.py").read_text()
    exec(compile(src.split("\ndef _compiler", 1)[0], "setup.py", "exec"), ns)  # imports and _hot_path only
    assert ns["_hot_path"]() == _build.HOT_PATH
