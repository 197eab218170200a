"""Δ: the repair guidance injected at the anchor (paper App. F.3), and the task-level prompts
of the baselines (App. E.1).

Δ for the suspicious policy is built only from the target id, the confirmed categories L_v and
the rule-derived evidence E_v. The judge's rationale, reference answers, evaluator verdicts and
evaluator-derived evidence are never inputs here: `AnchorChoice` does not carry them. The
random and last controls get the generic template, with no category and no evidence.
"""

from __future__ import annotations

from symtrace.diagnosis.anchors import AnchorChoice, AnchorPolicy
from symtrace.diagnosis.message_text import render
from symtrace.diagnosis.symptoms import Evidence
from symtrace.diagnosis.task import TaskSpec
from symtrace.diagnosis.templates import Templates, default_templates
from symtrace.model.canonical import JSONValue

EVIDENCE_LIMIT = 8  # evidence lines in Δ; the rest are summarised as "(n more)"
TASK_PROMPTS = ("unguided_rerun", "self_reflection", "critic_agent")


def build_guidance(choice: AnchorChoice, templates: Templates | None = None) -> str:
    """Δ for *choice*: symptom-conditioned for the suspicious policy, generic for controls."""
    templates = templates or default_templates()
    if choice.policy is not AnchorPolicy.SUSPICIOUS or not choice.categories:
        return templates.render("generic_node", target=choice.target, anchor=choice.anchor)
    categories = ", ".join(
        templates.render("category_item", category=c.value, meaning=c.meaning)
        for c in choice.categories
    )
    lines = _evidence_lines(choice.evidence, templates)
    return templates.render(
        "suspicious_node",
        target=choice.target,
        anchor=choice.anchor,
        categories=categories,
        evidence="\n".join(lines),
    )


def _evidence_lines(evidence: tuple[Evidence, ...], templates: Templates) -> list[str]:
    lines: list[str] = []
    for item in evidence:
        line = templates.render(
            "evidence_item",
            event_id=item.event_ids[0] if item.event_ids else "",
            category=item.category.value if item.category else "",
            rule=item.rule,
            quote=item.quote,
            note=item.note,
            scope=item.scope.value,
        )
        if line not in lines:
            lines.append(line)
    if len(lines) > EVIDENCE_LIMIT:
        lines = [*lines[:EVIDENCE_LIMIT], f"({len(lines) - EVIDENCE_LIMIT} more)"]
    return lines


def build_task_prompt(
    kind: str,
    task: TaskSpec,
    *,
    previous_final_answer: JSONValue = None,
    templates: Templates | None = None,
) -> str:
    """A task-level baseline prompt: `unguided_rerun`, `self_reflection` or `critic_agent`.

    These get the task information only (and, for the two feedback baselines, the failed
    run's final answer): never the trace, a failure location, a category or evidence.
    """
    if kind not in TASK_PROMPTS:
        raise ValueError(f"unknown task-level prompt {kind!r} (known: {', '.join(TASK_PROMPTS)})")
    templates = templates or default_templates()
    start = ", ".join((*task.start_urls, *task.tools)) or "none"
    values = {
        "task_id": task.task_id or "unknown",
        "benchmark": task.benchmark or "unknown",
        "split": task.split or "unknown",
        "task": task.text,
        "start_urls": start,
        "output_suffix": templates.render("output_suffix"),
    }
    if kind != "unguided_rerun":
        values["previous_final_answer"] = (
            "none" if previous_final_answer is None else render(previous_final_answer)
        )
    return templates.render(kind, **values)
