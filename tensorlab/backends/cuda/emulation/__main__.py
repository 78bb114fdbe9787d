"""python -m tensorlab.backends.cuda.emulation [--async] [python arguments...]

Runs `python <arguments>` with the CUDA emulation switched on and AddressSanitizer preloaded
(LD_PRELOAD and ASAN_OPTIONS from build.asan_environment); `--print-env` prints those variables as
shell assignments instead. `--async` runs the simulated asynchronous device (emulation/simulated.py:
work queued to a device thread, for teaching), e.g. `... --async -m jupyter lab examples/`."""
from __future__ import annotations

import os
import shlex
import sys

from .build import asan_environment


def main(argv):
    env = asan_environment()
    if argv[:1] == ["--async"]:
        argv = argv[1:]
        env["TENSORLAB_CUDA_EMULATION_ASYNC"] = "1"
    if argv[:1] == ["--print-env"]:
        for k in ("TENSORLAB_CUDA_EMULATION", "TENSORLAB_CUDA_EMULATION_ASYNC", "LD_PRELOAD", "ASAN_OPTIONS"):
            if k in env:
                print(f"export {k}={shlex.quote(env[k])}")
        return 0
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *argv], env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
