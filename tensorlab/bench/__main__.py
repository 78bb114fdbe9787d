"""python -m tensorlab.bench: see tensorlab/bench/cli.py."""
import sys

from .cli import main

sys.exit(main())
