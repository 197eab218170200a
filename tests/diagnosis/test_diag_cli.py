"""`symtrace diagnose` and `symtrace repair` through argparse, as the top-level CLI wires them."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from symtrace.cli.diagnose import add_parsers
from symtrace.diagnosis import DiagnosisConfigError, DiagnosisError, RepairUnavailable
from symtrace.errors import UnknownEvent

from ._support import gold_c3, gold_c4, write_bundle
from .test_diag_importers import MESSAGES

ROOT = Path(__file__).resolve().parents[2]


def recording_judge(url: str, into: str = "rec") -> list[str]:
    """Options of a diagnosis whose judge (at *url*) is recorded into the bundle *into*."""
    return ["--judge-url", url, "--judge-model", "tiny", "--record-judge", into]


def run(argv: list[str]) -> int:
    """Parse like symtrace.cli.main (program after "--" → args.command), errors not caught."""
    command: list[str] = []
    if "--" in argv:
        argv, command = argv[: argv.index("--")], argv[argv.index("--") + 1 :]
    parser = argparse.ArgumentParser(prog="symtrace")
    add_parsers(parser.add_subparsers(dest="subcommand", required=True))
    args = parser.parse_args(argv)
    args.command = command
    return args.func(args)


@pytest.fixture
def c3_bundle(tmp_path):
    return str(write_bundle(gold_c3(), tmp_path / "c3"))


class TestDiagnose:
    def test_table(self, c3_bundle, capsys):
        assert run(["diagnose", c3_bundle]) == 0
        out = capsys.readouterr().out
        assert "tool_result_0000" in out and "MissingSchema" in out
        assert "A repair resumes at agent_action_0000" in out
        assert run(["diagnose", c3_bundle, "--explain"]) == 0  # the coefficient table
        assert "First eligible anchor: at agent_action_0000" in capsys.readouterr().out

    def test_json_is_byte_identical(self, c3_bundle, capsys):
        run(["diagnose", c3_bundle, "--json"])
        first = capsys.readouterr().out
        run(["diagnose", c3_bundle, "--json"])
        assert capsys.readouterr().out == first
        data = json.loads(first)
        assert data["anchor"]["target"] == "agent_action_0000"
        assert [n["id"] for n in data["nodes"]][:2] == ["agent_action_0000", "tool_call_0000"]
        assert data["config"]["theta"] == 0.5

    def test_json_is_identical_across_processes(self, c3_bundle):
        """No hash-seed or set-order dependence: two interpreters, same bytes."""
        outs = []
        for seed in ("1", "2"):
            env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
            done = subprocess.run(
                [sys.executable, "-m", "symtrace", "diagnose", c3_bundle, "--json"],
                env=env,
                capture_output=True,
                check=True,
            )
            outs.append(done.stdout)
        assert outs[0] == outs[1] and outs[0]

    def test_explain(self, c3_bundle, capsys):
        run(["diagnose", c3_bundle, "--explain", "tool_result_0000"])
        out = capsys.readouterr().out
        for line in (
            "(21) B_r",
            "(26) S_r",
            "(30) S_s",
            "(33) c_f",
            "c3_error_recorded",
            "boundary: agent_action_0001 (downstream)",
        ):
            assert line in out
        run(["diagnose", c3_bundle, "--explain", "tool_result_0000", "--json"])
        assert json.loads(capsys.readouterr().out)["id"] == "tool_result_0000"
        run(["diagnose", c3_bundle, "--explain", "agent_action_0002"])
        with pytest.raises(UnknownEvent):
            run(["diagnose", c3_bundle, "--explain", "nope"])

    def test_explain_untriggered_node(self, tmp_path, capsys):
        path = write_bundle(gold_c4(), tmp_path / "c4")
        run(
            [
                "diagnose",
                str(path),
                "--disable-rule",
                "c4_no_tool_evidence",
                "--disable-rule",
                "c4_claim_contradicts_plan",
                "--explain",
                "agent_action_0000",
            ]
        )
        assert "No rule triggered" in capsys.readouterr().out

    def test_imported_log(self, tmp_path, capsys):
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(MESSAGES))
        run(["diagnose", str(path), "--task", "Refund for Feb 2023, a number only", "--json"])
        data = json.loads(capsys.readouterr().out)
        assert data["replayable"] is False
        assert data["task"]["text"] == "Refund for Feb 2023, a number only"
        run(["diagnose", str(path)])
        assert "analysis-only trace" in " ".join(capsys.readouterr().out.split())

    def test_options(self, c3_bundle, tmp_path, capsys):
        run(["diagnose", c3_bundle, "--theta", "0.99"])
        assert "not strong enough to repair from" in capsys.readouterr().out
        config = tmp_path / "k.json"
        config.write_text(json.dumps({"theta": 0.95}))
        run(["diagnose", c3_bundle, "--config", str(config), "--json"])
        assert json.loads(capsys.readouterr().out)["config"]["theta"] == 0.95
        run(["diagnose", c3_bundle, "--disable-rule", "c1_placeholder", "--json"])
        data = json.loads(capsys.readouterr().out)
        assert all(e["rule"] != "c1_placeholder" for n in data["nodes"] for e in n["evidence"])

    @pytest.mark.parametrize(
        ("extra", "message"),
        [
            (["--disable-rule", "c9"], "unknown rule"),
            (["--judge-url", "http://x/v1"], "both"),
            (["--record-judge", "out"], "needs --judge-url"),
            (
                [
                    "--judge-url",
                    "http://x",
                    "--judge-model",
                    "m",
                    "--judge-api-key-env",
                    "SYMTRACE_TEST_UNSET_KEY",
                ],
                "is not set",
            ),
        ],
    )
    def test_bad_options(self, c3_bundle, extra, message):
        with pytest.raises(DiagnosisConfigError, match=message):
            run(["diagnose", c3_bundle, *extra])

    def test_bad_config_file(self, c3_bundle, tmp_path):
        config = tmp_path / "k.json"
        config.write_text(json.dumps({"alpha": 1}))
        with pytest.raises(DiagnosisConfigError, match="unknown scoring coefficient"):
            run(["diagnose", c3_bundle, "--config", str(config)])


class _JudgeHandler(BaseHTTPRequestHandler):
    seen: ClassVar[list[dict]] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).seen.append({"path": self.path, "body": body})
        shown = json.loads(body["messages"][1]["content"])
        cats = [c["category"] for c in shown["proposed_categories"]]
        content = json.dumps({"confirmed": cats, "confidence": 0.75, "rationale": "audit me"})
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(reply.encode())

    def log_message(self, *args):
        pass


@pytest.fixture
def judge_url():
    _JudgeHandler.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _JudgeHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


class TestJudgeFromCli:
    def test_judge_over_http(self, c3_bundle, judge_url, capsys):
        run(["diagnose", c3_bundle, "--judge-url", judge_url, "--judge-model", "tiny", "--json"])
        data = json.loads(capsys.readouterr().out)
        assert data["judge"] == f"tiny @ {judge_url}"
        node = next(n for n in data["nodes"] if n["id"] == "tool_result_0000")
        assert node["judge"]["rationale"] == "audit me"
        assert node["features"]["c_llm"] == 0.75
        assert _JudgeHandler.seen[0]["path"] == "/v1/chat/completions"

    def test_record_judge_needs_symtrace_record(self, c3_bundle, judge_url, monkeypatch):
        import symtrace

        monkeypatch.setattr(symtrace, "record", None)  # lazy exports: delattr would re-import it
        with pytest.raises(DiagnosisError, match=r"symtrace\.record"):
            run(["diagnose", c3_bundle, *recording_judge(judge_url)])

    def test_record_judge_wraps_the_judge_calls(self, c3_bundle, judge_url, monkeypatch):
        import symtrace

        log = []

        @contextlib.contextmanager
        def record(path, *, task):
            log.append(("enter", path, task["judge_model"], len(_JudgeHandler.seen)))
            yield
            log.append(("exit", len(_JudgeHandler.seen)))

        monkeypatch.setattr(symtrace, "record", record, raising=False)
        run(["diagnose", c3_bundle, *recording_judge(judge_url), "--json"])
        assert log[0] == ("enter", "rec", "tiny", 0)
        assert log[1][0] == "exit" and log[1][1] > 0


class FakeOutcome:
    exit_code = 0
    diverged = False
    report = None
    child_bundle = "out/child"
    resolved_anchor = "agent_action_0000"
    report_json = None


@pytest.fixture
def fake_runner(monkeypatch):
    calls = []

    def replay_bundle(bundle_path, **kwargs):
        calls.append((bundle_path, kwargs))
        return FakeOutcome()

    module = types.ModuleType("symtrace.process.runner")
    module.replay_bundle = replay_bundle
    monkeypatch.setitem(sys.modules, "symtrace.process.runner", module)
    return calls


class TestRepair:
    def test_dry_run(self, c3_bundle, capsys):
        assert run(["repair", c3_bundle, "--dry-run"]) == 0
        out = capsys.readouterr().out
        assert "Repair at agent_action_0000 (suspicious policy)" in out
        assert "Revisit the step taken at agent_action_0000" in out

    def test_suspicious_repair_calls_selective_replay(self, c3_bundle, fake_runner, capsys):
        assert run(["repair", c3_bundle, "-o", "out/child", "--", "python", "app.py"]) == 0
        ((path, kwargs),) = fake_runner
        assert path == c3_bundle
        assert kwargs["anchor"] == "agent_action_0000" and kwargs["out"] == "out/child"
        assert kwargs["command"] == ["python", "app.py"] and kwargs["placement"] == "user"
        assert "__SHOPPING__" in kwargs["guidance"]
        assert "symtrace: repair wrote a new bundle" in capsys.readouterr().err

    @pytest.mark.parametrize("policy", ["random", "last"])
    def test_controls(self, c3_bundle, fake_runner, capsys, policy):
        run(["repair", c3_bundle, "--anchor-policy", policy, "--seed", "3", "--json"])
        ((_, kwargs),) = fake_runner
        assert "Check the task requirements" in kwargs["guidance"]
        data = json.loads(capsys.readouterr().out)
        assert data["anchor"]["policy"] == policy
        assert data["replay"]["child_bundle"] == "out/child"

    def test_templates_option(self, c3_bundle, tmp_path, fake_runner):
        path = tmp_path / "t.json"
        path.write_text(json.dumps({"generic_node": "Redo {anchor}."}))
        run(["repair", c3_bundle, "--anchor-policy", "last", "--templates", str(path)])
        assert fake_runner[0][1]["guidance"] == "Redo agent_action_0002."

    def test_without_runner(self, c3_bundle, monkeypatch):
        monkeypatch.setitem(sys.modules, "symtrace.process.runner", None)
        with pytest.raises(RepairUnavailable):
            run(["repair", c3_bundle])


def test_record_judge_with_the_real_recorder(c3_bundle, judge_url, tmp_path, capsys):
    """--record-judge writes a bundle whose agent actions are the judge's LLM calls."""
    from symtrace.bundle import load_bundle

    out = tmp_path / "judge-run"
    run(["diagnose", c3_bundle, *recording_judge(judge_url, str(out)), "--json"])
    data = json.loads(capsys.readouterr().out)
    judged = sum(1 for n in data["nodes"] if n["judge"] is not None)
    recorded = load_bundle(out)
    calls = [e for e in recorded.events if e.type.value == "agent_action"]
    assert len(calls) == judged == len(_JudgeHandler.seen)
    assert recorded.task["judge_model"] == "tiny"
    assert calls[0].request["body"]["model"] == "tiny"


class TestThroughSymtraceMain:
    """The real top-level CLI maps the typed errors to its documented exit codes."""

    def test_exit_codes(self, c3_bundle, tmp_path, capsys):
        from symtrace.cli import main
        from symtrace.errors import EXIT_ANCHOR, EXIT_BUNDLE, EXIT_DIVERGED, EXIT_USAGE

        assert main(["diagnose", c3_bundle, "--json"]) == 0
        assert main(["diagnose", str(tmp_path / "nothing.json")]) == EXIT_BUNDLE
        assert main(["diagnose", c3_bundle, "--disable-rule", "c9"]) == EXIT_USAGE
        assert main(["repair", c3_bundle, "--dry-run", "--theta", "0.999"]) == EXIT_ANCHOR
        log = tmp_path / "chat.json"
        log.write_text(json.dumps(MESSAGES))
        assert main(["repair", str(log)]) == EXIT_DIVERGED  # UnreplayableEvent is a ReplayError
        err = capsys.readouterr().err
        assert "analysis-only trace" in err and str(log) in err


def test_replay_judge_serves_the_recorded_verdicts(c3_bundle, judge_url, tmp_path, capsys):
    """A diagnosis with a judge replays from its --record-judge bundle: same bytes, no calls."""
    out = tmp_path / "judge-run"
    judge = ["--judge-url", judge_url, "--judge-model", "tiny", "--json"]
    run(["diagnose", c3_bundle, *judge, "--record-judge", str(out)])
    recorded = capsys.readouterr().out
    calls = len(_JudgeHandler.seen)
    run(["diagnose", c3_bundle, *judge, "--replay-judge", str(out)])
    assert capsys.readouterr().out == recorded
    assert len(_JudgeHandler.seen) == calls
