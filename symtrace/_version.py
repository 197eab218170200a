"""Which symtrace this is: its version, and where its package lives."""

from pathlib import Path

__version__ = "0.1.0"

# the directory holding the symtrace package: put first on a child's path so it imports this
# symtrace whatever the program did to sys.path (process/spawn.py)
PACKAGE_ROOT = Path(__file__).resolve().parents[1]
