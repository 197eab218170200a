"""Repair or resample? The study runner's old entry point, kept for existing commands.

    .venv/bin/python experiments/repair_vs_resample.py experiments/configs/suite-stub.json

is `python -m symtrace_study run CONFIG [...]`; see experiments/README.md.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
    from symtrace_study.__main__ import main

    sys.exit(main(["run", *sys.argv[1:]]))
