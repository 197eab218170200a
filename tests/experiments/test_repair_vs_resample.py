"""The old entry point forwards to `python -m symtrace_study run`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_old_entry_point_runs_the_study_cli(tmp_path):
    config = tmp_path / "c.json"
    config.write_text('{"methods": ["magic"], "out": "%s"}' % (tmp_path / "out"))
    proc = subprocess.run([sys.executable, str(ROOT / "experiments" / "repair_vs_resample.py"),
                           str(config)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "unknown methods" in proc.stderr
    assert not (tmp_path / "out").exists()
