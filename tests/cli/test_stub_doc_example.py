"""Issue 38: the worked example of docs/stub.md ("prove a strict replay made 0 requests") runs
as written: the shell block is taken from the page and run with bash, so the page cannot
drift from the CLI and the stub's request counter."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

ROOT = Path(__file__).resolve().parents[2]


def worked_example() -> str:
    text = (ROOT / "docs" / "stub.md").read_text()
    return re.search(r"## The request counter.*?```sh\n(.*?)```", text, re.DOTALL).group(1)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("bash") is None,
                    reason="needs curl and bash on PATH")
def test_the_worked_example_proves_zero_requests(tmp_path):
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "trip_planner.py", tmp_path / "examples")
    (tmp_path / "example.sh").write_text(worked_example())
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "NO_COLOR": "1"}
    done = subprocess.run(["bash", "-e", "example.sh"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    stats = [orjson.loads(m) for m in re.findall(r'\{"served".*?"mode":"\w+"\}', done.stdout)]
    assert len(stats) == 2
    assert stats[0]["served"] > 0  # the recording's calls reached the stub
    assert stats[1] == {"served": 0, "by_path": {}, "mode": "stochastic"}  # the replay's: none
    assert "0 live requests" in done.stderr
