"""`symtrace diagnose --eval LABELS`, the no-anchor exit code, and the judge against the stub
endpoint (any OpenAI-compatible URL) end to end."""

from __future__ import annotations

import json

import pytest

from symtrace.cli import main
from symtrace.diagnosis import diagnose
from symtrace.diagnosis.errors import LabelsError
from symtrace.diagnosis.evaluate import evaluate, load_labels, render_report
from symtrace.errors import EXIT_ANCHOR, EXIT_BUNDLE, EXIT_USAGE
from symtrace.stub import StubLLM

from ._support import TraceBuilder, gold_c3, write_bundle


def quiet_trace() -> TraceBuilder:
    b = TraceBuilder("Say hello.")
    b.agent("Hello!", agent="greeter")
    b.final("Hello!")
    return b


def conversation(mistake_first: bool) -> list[dict]:
    """Three decisions and a code failure whose author is the first or the second decision."""
    failing = "```python\nprint(x)\n```"
    failed = "exitcode: 1 (execution failed)\nCode output: NameError: name 'x' is not defined"
    turns = (
        [("planner", failing), ("Computer_terminal", failed), ("coder", "Let me look.")]
        if mistake_first
        else [("planner", "The coder computes it."), ("coder", failing),
              ("Computer_terminal", failed)]
    )  # fmt: skip
    turns.append(("writer", "The answer is 4."))
    return [{"step": i, "agent_name": a, "content": c} for i, (a, c) in enumerate(turns)]


@pytest.fixture
def labelled(tmp_path):
    """Two imported logs and a labels file pointing at them (relative paths)."""
    entries = []
    for name, mistake_first in (("a", True), ("b", False)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"question": "2+2?", "trajectory": conversation(mistake_first)}))
        entries.append({"trace": path.name, "mistake_step": 0 if mistake_first else 1,
                        "mistake_agent": "planner" if mistake_first else "coder"})  # fmt: skip
    labels = tmp_path / "labels.json"
    labels.write_text(json.dumps({"traces": entries}))
    return labels


class TestEvaluate:
    def test_scores_and_baselines_are_computed(self, labelled):
        report = evaluate(load_labels(labelled), diagnose, seed=3)
        summary = report.summary()
        # The code's author is the anchor in both logs (the exec failure traced back).
        assert summary["anchor"] == {"agent": 1.0, "step_0": 1.0, "step_1": 1.0, "step_3": 1.0}
        # Three decisions (planner 0, coder 1, writer 3): random hits the label 1 time in 3.
        assert summary["random_expected"]["step_0"] == pytest.approx(1 / 3, abs=1e-6)
        assert summary["random_expected"]["step_1"] == pytest.approx((2 / 3 + 1 / 3) / 2, abs=1e-6)
        assert summary["first"]["step_0"] == 0.5 and summary["last"]["step_0"] == 0.0
        assert report.placement() == {"before": 0, "at": 2, "after": 0, "none": 0}
        text = render_report(report)
        assert "anchor (suspicious)" in text and "random (seed 3)" in text

    def test_a_trace_without_an_anchor_counts_as_a_miss(self, labelled, tmp_path):
        write_bundle(quiet_trace().bundle(), tmp_path / "quiet")
        entries = json.loads(labelled.read_text())["traces"]
        entries.append({"trace": "quiet", "mistake_step": 0, "mistake_agent": "greeter"})
        labelled.write_text(json.dumps(entries))
        report = evaluate(load_labels(labelled), diagnose)
        assert report.placement() == {"before": 0, "at": 2, "after": 0, "none": 1}
        assert report.summary()["anchor"]["step_0"] == pytest.approx(2 / 3, abs=1e-6)
        assert report.when_anchored() == {
            "agent": 1.0,
            "count": 2.0,
            "step_0": 1.0,
            "step_1": 1.0,
            "step_3": 1.0,
        }
        assert "anchor present on 2/3 traces" in render_report(report)

    def test_without_trace_back_the_anchor_lands_after_the_mistake(self, labelled):
        report = evaluate(load_labels(labelled), lambda b: diagnose(b, trace_back=False))
        assert report.summary()["anchor"]["step_0"] == 0.0
        assert report.placement()["after"] == 2

    def test_mistake_event_labels(self, tmp_path):
        path = write_bundle(gold_c3(), tmp_path / "c3")
        labels = tmp_path / "labels.jsonl"
        labels.write_text(json.dumps({"trace": "c3", "mistake_event": "agent_action_0000",
                                      "mistake_agent": "assistant"}) + "\n")  # fmt: skip
        report = evaluate(load_labels(labels), diagnose)
        assert report.traces[0].step == 0 and str(report.traces[0].label.trace) == str(path)
        assert report.summary()["anchor"]["step_0"] == 1.0

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("not json {", "neither JSON nor JSONL"),
            ("[]", "non-empty list"),
            ('[{"mistake_step": 1}]', "no 'trace' path"),
            ('[{"trace": "x", "mistake_step": 1.5}]', "must be an integer"),
            ('[{"trace": "x"}]', "needs mistake_step or mistake_event"),
            ('[{"trace": "x", "mistake_step": 1, "mistake_agent": 3}]', "must be a string"),
        ],
    )
    def test_bad_labels_are_typed_errors(self, tmp_path, content, message):
        labels = tmp_path / "labels.json"
        labels.write_text(content)
        with pytest.raises(LabelsError, match=message):
            load_labels(labels)

    def test_unknown_mistake_event(self, tmp_path):
        write_bundle(gold_c3(), tmp_path / "c3")
        labels = tmp_path / "labels.json"
        labels.write_text('[{"trace": "c3", "mistake_event": "tool_call_0000"}]')
        with pytest.raises(LabelsError, match="not an agent decision"):
            evaluate(load_labels(labels), diagnose)


class TestCommandLine:
    def test_eval_table_and_json(self, labelled, capsys):
        assert main(["diagnose", "--eval", str(labelled)]) == 0
        table = capsys.readouterr().out
        assert "2 labelled traces" in table and "first decision" in table
        assert main(["diagnose", "--eval", str(labelled), "--json", "--seed", "1"]) == 0
        first = capsys.readouterr().out
        assert main(["diagnose", "--eval", str(labelled), "--json", "--seed", "1"]) == 0
        assert capsys.readouterr().out == first  # deterministic bytes
        data = json.loads(first)
        assert data["count"] == 2 and data["summary"]["anchor"]["step_0"] == 1.0

    def test_eval_usage_errors(self, labelled, tmp_path, capsys):
        assert main(["diagnose", "--eval", str(tmp_path / "missing.json")]) == EXIT_USAGE
        assert main(["diagnose", "x", "--eval", str(labelled)]) == EXIT_USAGE
        assert main(["diagnose"]) == EXIT_USAGE
        broken = tmp_path / "broken.json"
        broken.write_text('[{"trace": "nowhere.json", "mistake_step": 0}]')
        assert main(["diagnose", "--eval", str(broken)]) == EXIT_BUNDLE
        capsys.readouterr()

    def test_no_eligible_anchor_is_a_finding_exit_0(self, tmp_path, capsys):
        path = write_bundle(quiet_trace().bundle(), tmp_path / "quiet")
        assert main(["diagnose", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["anchor"] is None
        assert main(["diagnose", str(path)]) == 0
        assert "No symptom found" in capsys.readouterr().out
        # --explain describes one node; it is not a verdict on the trace.
        assert main(["diagnose", str(path), "--explain", "agent_action_0000"]) == 0
        # repair is the command that fails when there is nothing to repair
        assert main(["repair", str(path), "--dry-run"]) == EXIT_ANCHOR
        assert "No symptom found" in capsys.readouterr().err
        c3 = write_bundle(gold_c3(), tmp_path / "c3")
        assert main(["diagnose", str(c3), "--json"]) == 0


VERDICT = {"confirmed": ["C1", "C3", "C4"], "confidence": 0.9, "rationale": "seen in the trace"}


def test_judge_against_the_stub_endpoint(tmp_path, labelled, capsys, monkeypatch):
    """The judge is any OpenAI-compatible endpoint: here symtrace's own stub over real HTTP,
    with an API key taken from the environment, for one diagnosis and for --eval."""
    script = {"rules": [{"match": {"model": "judge-small"},
                         "reply": {"content": json.dumps(VERDICT)}}]}  # fmt: skip
    c3 = write_bundle(gold_c3(), tmp_path / "c3")
    monkeypatch.setenv("JUDGE_KEY", "sk-local")
    with StubLLM(script=script) as stub:
        judge = ["--judge-url", stub.url, "--judge-model", "judge-small",
                 "--judge-api-key-env", "JUDGE_KEY"]  # fmt: skip
        assert main(["diagnose", str(c3), "--json", *judge]) == 0
        data = json.loads(capsys.readouterr().out)
        judged = [n for n in data["nodes"] if n["judge"] is not None]
        assert judged and all(n["judge"]["rationale"] == "seen in the trace" for n in judged)
        assert data["judge"] == f"judge-small @ {stub.url}"
        served = stub.served
        assert served == len(judged)
        assert main(["diagnose", "--eval", str(labelled), "--json", *judge]) == 0
        assert json.loads(capsys.readouterr().out)["count"] == 2
        assert stub.served > served
        # The wrong model name matches no script rule: the stub's error is a JudgeError.
        wrong = [*judge[:3], "nobody", *judge[4:]]
        assert main(["diagnose", str(c3), *wrong]) != 0
    capsys.readouterr()
