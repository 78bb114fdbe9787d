"""python -m tensorlab.compat [-c code | -m module | script.py] [args...]: run PyTorch code on tensorlab,
as `__main__`, with sys.argv set as python would set it."""
from __future__ import annotations

import os
import runpy
import sys
import traceback

_HERE = os.path.dirname(os.path.abspath(__file__))


def _report(exc):
    """Print the traceback as `python script.py` would: without the runner's own frames (runpy,
    this file) before the script and without the alias's frame that raised a missing name."""
    tb = traceback.TracebackException.from_exception(exc)
    for te in [tb] + [x for x in (tb.__cause__, tb.__context__) if x is not None]:
        frames = list(te.stack)
        while frames and (frames[0].filename.startswith("<frozen") or frames[0].filename.startswith(_HERE)):
            frames.pop(0)
        while len(frames) > 1 and frames[-1].filename.startswith(_HERE):
            frames.pop()
        te.stack = traceback.StackSummary.from_list(frames)
    sys.stderr.write("".join(tb.format()))

USAGE = ("usage: python -m tensorlab.compat [-c code | -m module | script.py] [args ...]\n"
         "       python -m tensorlab.compat --support-table [--full | --write] | --check script.py ...")


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE + "\nRuns an unmodified PyTorch script with `import torch` resolving to tensorlab.",
              file=sys.stderr if not argv else sys.stdout)
        return 2 if not argv else 0
    if argv[0] in ("--support-table", "--check"):  # support.py: what resolves, per torch package / per script
        from .support import main as support_main
        return support_main(argv)
    from . import install
    install()
    if argv[0] == "-c":  # as python -c: sys.argv[0] is '-c', the code runs in a fresh __main__ namespace
        if len(argv) < 2:
            print("Argument expected for the -c option\n" + USAGE, file=sys.stderr)
            return 2
        sys.argv = ["-c"] + argv[2:]
        sys.path.insert(0, "")
        return _run(_run_code, argv[1])
    if argv[0] == "-m":
        if len(argv) < 2:
            print(USAGE, file=sys.stderr)
            return 2
        sys.argv = [argv[1]] + argv[2:]
        sys.path.insert(0, os.getcwd())
        return _run(runpy.run_module, argv[1], run_name="__main__", alter_sys=True)
    script = argv[0]
    if not os.path.exists(script):
        print(f"tensorlab.compat: can't open file {script!r}: no such file", file=sys.stderr)
        return 2
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(script))
    return _run(runpy.run_path, script, run_name="__main__")


def _run_code(code):
    import types
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    saved = sys.modules.get("__main__")
    sys.modules["__main__"] = main
    try:
        exec(compile(code, "<string>", "exec"), main.__dict__)
    finally:
        if saved is not None:
            sys.modules["__main__"] = saved


def _run(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except Exception as e:
        _report(e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
