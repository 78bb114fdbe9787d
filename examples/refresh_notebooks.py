"""Execute every notebook in examples/ and store its outputs in place, so a reader sees what each cell does
without running it (GitHub, nbviewer, an editor's preview). Run after changing a notebook or the behaviour it
shows, from the checkout, and commit the result:

    .venv/bin/python examples/refresh_notebooks.py [NAME.ipynb ...]

Each notebook runs on the python3 kernel with the checkout importable, in examples/ (so relative paths
work), on whatever devices this machine has; the notebook's metadata records where its outputs came from.
tests/test_notebooks.py re-executes every notebook in CI and checks that the stored run is complete."""
from __future__ import annotations

import os
import platform
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def refresh(path, timeout=600):
    import nbclient
    import nbformat
    nb = nbformat.read(path, as_version=4)
    env_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.environ["PYTHONPATH"] = env_path
    os.environ.setdefault("MPLBACKEND", "Agg")
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path":
                                                                                                      str(HERE)}})
    client.execute()
    sys.path.insert(0, str(ROOT))
    import tensorlab as tl
    nb.metadata["tensorlab"] = {
        "outputs_from": "examples/refresh_notebooks.py",
        "executed": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                   + ("a CUDA GPU" if tl.cuda.is_available() else "no GPU (the notebook's CPU branches ran)"),
        "tensorlab": tl.__version__,
    }
    nbformat.write(nb, path)
    return path


def main(argv):
    paths = [HERE / a for a in argv] if argv else sorted(HERE.glob("*.ipynb"))
    for p in paths:
        t0 = time.perf_counter()
        refresh(p)
        print(f"{p.name}: outputs stored ({time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
