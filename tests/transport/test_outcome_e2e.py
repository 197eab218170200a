"""Outcome verification: a strict replay that ends differently is a divergence, not a success."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.transport.test_programs_e2e import endpoint_env, symtrace

PROGRAM = str(Path(__file__).parent / "programs" / "egress_program.py")
pytestmark = pytest.mark.slow


def test_uncaptured_entropy_in_stdout_is_a_divergence(tmp_path, stub_llm):
    bundle = tmp_path / "run"
    done = symtrace("record", "-o", str(bundle), "--", "python", PROGRAM, "urandom",
                    env=endpoint_env(stub_llm))
    assert done.returncode == 0, done.stderr[-3000:]
    report = tmp_path / "report.json"
    replay = symtrace("replay", str(bundle), "--report-json", str(report),
                      env=endpoint_env(stub_llm))
    assert replay.returncode == 90, replay.stderr[-3000:]
    found = orjson.loads(report.read_bytes())["report"]
    assert found["kind"] == "outcome_mismatch" and found["code"] == "SYM-R107"
    assert found["actual"]["what"] == "stdout" and found["actual"]["line"] == 2
    assert found["actual"]["expected"].startswith("TOKEN:")
    assert "line 2" in replay.stderr

    tolerant = symtrace("replay", str(bundle), "--volatile-stdout", r"^TOKEN: [0-9a-f]+$",
                        env=endpoint_env(stub_llm))
    assert tolerant.returncode == 0, tolerant.stderr[-3000:]
    assert "served 1 boundary call" in tolerant.stderr and "0 live requests" in tolerant.stderr


def test_a_bad_volatile_regex_is_a_usage_error_before_anything_runs(tmp_path, stub_llm):
    bundle = tmp_path / "run"
    symtrace("record", "-o", str(bundle), "--", "python", PROGRAM, env=endpoint_env(stub_llm))
    served = stub_llm.served
    bad = symtrace("replay", str(bundle), "--volatile-stdout", "(unclosed",
                   env=endpoint_env(stub_llm))
    assert bad.returncode == 2 and "--volatile-stdout" in bad.stderr
    assert stub_llm.served == served
