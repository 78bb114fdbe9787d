"""The CPU-vs-GPU benchmark command: `python -m tensorlab.bench [--quick] [--out DIR]` (installed
as `tensorlab-bench`). suite.py holds the workloads and the measuring loop, libs.py the adapters
of the compared libraries, report.py the table, JSON and plot, cli.py the command line."""
from __future__ import annotations

from .cli import main

__all__ = ["main"]
