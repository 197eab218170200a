"""Δ (App. F.3), the task-level prompts (App. E.1), and templates as overridable data."""

from __future__ import annotations

import json
from typing import ClassVar

import pytest

from symtrace.diagnosis import (
    AnchorChoice,
    AnchorPolicy,
    TemplateError,
    build_guidance,
    build_task_prompt,
    default_templates,
    diagnose,
    load_templates,
    parse_task,
    plan_repair,
    select_anchor,
)
from symtrace.diagnosis.templates import FIELDS

from ._support import gold_c3, gold_c4


class TestSuspiciousGuidance:
    def test_built_from_target_categories_and_rule_evidence(self):
        d = diagnose(gold_c3())
        delta = build_guidance(d.anchor)
        assert "agent_action_0000" in delta
        assert "C1 (task-constraint violation)" in delta
        assert "C4 (plan–action–outcome inconsistency)" in delta
        assert "__SHOPPING__" in delta  # quoted trace evidence
        assert "C3" not in delta  # only the anchor's confirmed categories

    def test_target_differs_from_anchor(self):
        """When the suspicious node is a tool result, Δ names it as the target."""
        d = diagnose(
            gold_c3(),
            rules=[r for r in diagnose(gold_c3()).rules if r.category.value == "C3"],
            trace_back=False,
        )
        assert d.anchor.target == "tool_result_0000"
        assert d.anchor.anchor == "agent_action_0001"
        assert "tool_result_0000" in build_guidance(d.anchor)

    def test_judge_rationale_and_evaluator_never_in_delta(self):
        def judge(request):
            from symtrace.diagnosis import JudgeVerdict

            return JudgeVerdict(request.proposed, 0.9, "RATIONALE-XYZ says Ida Workout")

        d = diagnose(gold_c4(), judge=judge)
        delta = build_guidance(d.anchor)
        assert "RATIONALE-XYZ" not in delta and "Ida Workout" not in delta
        assert d.node(d.anchor.target).verdict.rationale.startswith("RATIONALE-XYZ")

    def test_evidence_list_is_capped(self):
        d = diagnose(gold_c3())
        many = AnchorChoice(
            AnchorPolicy.SUSPICIOUS,
            "a",
            "a",
            "self",
            d.anchor.categories,
            tuple(e for n in d.nodes for e in n.evidence),
        )
        assert "more)" in build_guidance(many)


class TestGenericGuidance:
    @pytest.mark.parametrize("policy", ["random", "last"])
    def test_controls_get_the_generic_template(self, policy):
        plan = plan_repair(gold_c3(), policy=policy, seed=1)
        assert plan.guidance == default_templates().render(
            "generic_node", target=plan.choice.target, anchor=plan.choice.anchor
        )
        for token in ("C1", "C2", "C3", "C4", "MissingSchema", "__SHOPPING__"):
            assert token not in plan.guidance

    def test_suspicious_choice_without_categories_is_generic(self):
        d = diagnose(gold_c3())
        choice = select_anchor(d, "last")
        assert "Check the task requirements" in build_guidance(choice)


class TestTaskPrompts:
    TASK: ClassVar[dict] = {
        "task": "Find the refund.",
        "task_id": "webarena_320",
        "benchmark": "WebArena",
        "split": "hard",
        "start_urls": ["http://shop.local"],
        "reference_answer": "406.53",
    }

    def test_unguided_rerun(self):
        text = build_task_prompt("unguided_rerun", parse_task(self.TASK))
        assert "Mode: fail-then-rerun" in text and "webarena_320" in text
        assert "WebArena / hard" in text and "http://shop.local" in text
        assert "Previous final answer" not in text and "406.53" not in text

    @pytest.mark.parametrize(
        ("kind", "mode"), [("self_reflection", "self-reflection"), ("critic_agent", "critic-agent")]
    )
    def test_feedback_baselines_get_the_previous_answer(self, kind, mode):
        text = build_task_prompt(kind, parse_task(self.TASK), previous_final_answer=58.99)
        assert f"Mode: {mode}" in text and "Previous final answer: 58.99" in text
        assert default_templates().render("output_suffix") in text
        assert "406.53" not in text

    def test_unknown_kind(self):
        with pytest.raises(ValueError, match="unknown task-level prompt"):
            build_task_prompt("majority_vote", parse_task("x"))


class TestTemplateFiles:
    def test_defaults_cover_every_template(self):
        assert set(default_templates().texts) == set(FIELDS)

    def test_override_replaces_only_what_it_names(self, tmp_path):
        path = tmp_path / "t.json"
        path.write_text(json.dumps({"generic_node": "Fix step {anchor}."}))
        templates = load_templates(path)
        assert templates.render("generic_node", target="x", anchor="agent_action_0001") == (
            "Fix step agent_action_0001."
        )
        assert templates.texts["suspicious_node"] == default_templates().texts["suspicious_node"]
        plan = plan_repair(gold_c3(), policy="last", templates=templates)
        assert plan.guidance == f"Fix step {plan.choice.anchor}."

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ({"generic_nodes": "x"}, "unknown template"),
            ({"generic_node": "Fix {evidence}"}, "unknown placeholder"),
            ({"generic_node": "Fix {anchor"}, "not a valid format string"),
            ({"generic_node": 3}, "must be a string"),
            ([1, 2], "expected a JSON object"),
        ],
    )
    def test_bad_overrides_fail_at_load(self, tmp_path, content, message):
        path = tmp_path / "t.json"
        path.write_text(json.dumps(content))
        with pytest.raises(TemplateError, match=message):
            load_templates(path)

    def test_unreadable_override(self, tmp_path):
        with pytest.raises(TemplateError, match="cannot read"):
            load_templates(tmp_path / "missing.json")
        bad = tmp_path / "bad.json"
        bad.write_text("{nope")
        with pytest.raises(TemplateError, match="not valid JSON"):
            load_templates(bad)
