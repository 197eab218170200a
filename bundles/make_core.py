"""Re-record the core reference bundles (framework-free example MAS).

    .venv/bin/python bundles/make_core.py

Runs from the repository root with relative paths, so the recorded command replays from any
clone. The endpoint is the embedded stub, stochastic with a fixed seed, so re-recording gives
the same trajectory.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import orjson

from symtrace.process.runner import record_command
from symtrace.stub import StubLLM

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ["python", "examples/trip_planner.py"]


def main() -> int:
    os.chdir(ROOT)
    with StubLLM(mode="stochastic", seed=7, tool_probability=0.9) as stub:
        os.environ.update(OPENAI_BASE_URL=stub.url, OPENAI_API_KEY="sk-test")
        out = Path("bundles/core-trip-planner")
        record_command(out, EXAMPLE, task="Plan a two-day trip to Lisbon", seed=1, force=True,
                       quiet=True)
        # A run recorded with another model name (TRIP_MODEL is not part of the captured
        # environment): replaying today's program must fail at the first LLM call.
        os.environ["TRIP_MODEL"] = "stub-model-old"
        diverged = Path("bundles/divergent/core-model-drift")
        record_command(diverged, EXAMPLE, task="Plan a two-day trip to Lisbon", seed=1,
                       force=True, quiet=True)
        del os.environ["TRIP_MODEL"]
        (diverged / "expected_divergence.json").write_bytes(orjson.dumps({
            "kind": "request_mismatch",
            "event_id": "agent_action_0000",
            "path": "/body/model",
            "why": "recorded with TRIP_MODEL=stub-model-old; the program now asks for "
                   "stub-model",
        }, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")
    for path in (out, diverged):
        shutil.rmtree(path / "__pycache__", ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
