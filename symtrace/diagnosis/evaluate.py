"""`symtrace diagnose --eval LABELS`: how often the anchor finds the labelled mistake.

LABELS is a JSON list, a JSONL file or `{"traces": [...]}` of entries

    {"trace": "path/to/bundle-or-log", "mistake_step": 3, "mistake_agent": "researcher"}

(`mistake_event: "agent_action_0002"` may stand in for `mistake_step`; paths are relative to
the labels file; `format` and `task` are passed to the importer). Each trace is diagnosed
with the given rules, config and judge, and the anchor — the LLM boundary where Δ would be
injected — is compared with the label, next to three baselines over the same candidates (the
trace's agent decisions, as for the repair controls): a uniformly random decision (its
expected value, and one seeded draw), the first and the last decision.

Steps are the log's own step numbers when it has them (imported `steps` logs), otherwise the
position of the decision among the trace's agent decisions. Agents compare by their base name
("Orchestrator (-> WebSurfer)" is "Orchestrator"), case-insensitively. Labels are read only
here: nothing in them reaches the rules, the judge or Δ.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symtrace.diagnosis.anchors import decisions
from symtrace.diagnosis.dialects import base_agent
from symtrace.diagnosis.errors import LabelsError
from symtrace.diagnosis.importers import load_source
from symtrace.diagnosis.pipeline import Diagnosis
from symtrace.diagnosis.view import NodeView, TraceContext

WINDOWS = (0, 1, 3)  # step-exact, ±1, ±3
METHODS = ("anchor", "random_expected", "random_seeded", "first", "last")


@dataclass(frozen=True)
class Label:
    trace: Path
    mistake_step: int | None
    mistake_event: str | None
    mistake_agent: str | None
    format: str = "auto"
    task: Any = None


@dataclass(frozen=True)
class Pick:
    """One method's choice on one trace: a step and an agent (None: no choice)."""

    step: int | None
    agent: str | None
    event: str | None = None


@dataclass(frozen=True)
class TraceEval:
    label: Label
    step: int  # the labelled step, resolved
    agent: str | None
    candidates: tuple[Pick, ...]
    picks: dict[str, Pick]  # anchor, random_seeded, first, last

    def hit(self, pick: Pick, window: int) -> float:
        return float(pick.step is not None and abs(pick.step - self.step) <= window)

    def agent_hit(self, pick: Pick) -> float:
        return float(pick.agent is not None and _same_agent(pick.agent, self.agent))

    def scores(self, method: str) -> dict[str, float]:
        """Step hits within each window and the agent hit (expected value for random)."""
        if method == "random_expected":
            n = len(self.candidates) or 1
            out = {f"step_{w}": sum(self.hit(c, w) for c in self.candidates) / n for w in WINDOWS}
            out["agent"] = sum(self.agent_hit(c) for c in self.candidates) / n
            return out
        pick = self.picks[method]
        out = {f"step_{w}": self.hit(pick, w) for w in WINDOWS}
        out["agent"] = self.agent_hit(pick)
        return out

    def to_json(self) -> dict[str, Any]:
        anchor = self.picks["anchor"]
        return {
            "trace": str(self.label.trace),
            "label": {"step": self.step, "agent": self.agent},
            "anchor": {"step": anchor.step, "agent": anchor.agent, "event": anchor.event},
            "candidates": len(self.candidates),
            "scores": {m: self.scores(m) for m in METHODS},
        }


@dataclass(frozen=True)
class EvalReport:
    labels: str
    seed: int
    traces: tuple[TraceEval, ...]

    def summary(self) -> dict[str, dict[str, float]]:
        n = len(self.traces) or 1
        out: dict[str, dict[str, float]] = {}
        for method in METHODS:
            totals: dict[str, float] = {}
            for trace in self.traces:
                for key, value in trace.scores(method).items():
                    totals[key] = totals.get(key, 0.0) + value
            out[method] = {k: round(v / n, 6) for k, v in sorted(totals.items())}
        return out

    def when_anchored(self) -> dict[str, float]:
        """The anchor's accuracy on the traces where it exists (Algorithm 4 may decline to
        intervene; the summary counts that as a miss, this shows the other side)."""
        anchored = [t for t in self.traces if t.picks["anchor"].step is not None]
        n = len(anchored) or 1
        totals: dict[str, float] = {"count": float(len(anchored))}
        for trace in anchored:
            for key, value in trace.scores("anchor").items():
                totals[key] = totals.get(key, 0.0) + value / n
        return {k: round(v, 6) for k, v in sorted(totals.items())}

    def placement(self) -> dict[str, int]:
        """Where the anchor fell relative to the labelled step."""
        counts = {"before": 0, "at": 0, "after": 0, "none": 0}
        for trace in self.traces:
            step = trace.picks["anchor"].step
            key = (
                "none"
                if step is None
                else "at"
                if step == trace.step
                else "before"
                if step < trace.step
                else "after"
            )
            counts[key] += 1
        return counts

    def to_json(self) -> dict[str, Any]:
        return {
            "labels": self.labels,
            "seed": self.seed,
            "count": len(self.traces),
            "summary": self.summary(),
            "anchor_placement": self.placement(),
            "anchor_when_present": self.when_anchored(),
            "traces": [t.to_json() for t in self.traces],
        }


def load_labels(path: str | os.PathLike[str]) -> tuple[Label, ...]:
    """Read a labels file (see the module docstring); every problem is a LabelsError."""
    where = Path(path)
    try:
        raw = where.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelsError(f"{where}: cannot read the labels file ({exc})") from exc
    try:
        data: Any = json.loads(raw)
    except ValueError:
        try:
            data = [json.loads(line) for line in raw.splitlines() if line.strip()]
        except ValueError as exc:
            raise LabelsError(f"{where}: neither JSON nor JSONL ({exc})") from exc
    if isinstance(data, dict):
        data = data.get("traces") if "traces" in data else [data]  # one JSONL line
    if not isinstance(data, list) or not data:
        raise LabelsError(f"{where}: expected a non-empty list of labelled traces")
    return tuple(_label(item, i, where) for i, item in enumerate(data))


def _label(item: object, i: int, where: Path) -> Label:
    at = f"{where}: traces[{i}]"
    if not isinstance(item, dict):
        raise LabelsError(f"{at} is not a JSON object")
    trace = item.get("trace", item.get("path"))
    if not isinstance(trace, str) or not trace:
        raise LabelsError(f"{at} has no 'trace' path")
    step = item.get("mistake_step")
    if isinstance(step, str) and step.strip().lstrip("-").isdigit():
        step = int(step)  # Who&When writes some steps as strings
    if step is not None and (not isinstance(step, int) or isinstance(step, bool)):
        raise LabelsError(f"{at}: mistake_step must be an integer, got {step!r}")
    event = item.get("mistake_event")
    if event is not None and not isinstance(event, str):
        raise LabelsError(f"{at}: mistake_event must be an event id")
    if step is None and event is None:
        raise LabelsError(f"{at} needs mistake_step or mistake_event")
    agent = item.get("mistake_agent")
    if agent is not None and not isinstance(agent, str):
        raise LabelsError(f"{at}: mistake_agent must be a string")
    path = Path(trace)
    if not path.is_absolute():
        path = where.parent / path
    return Label(path, step, event, agent, str(item.get("format", "auto")), item.get("task"))


def evaluate(
    labels: Iterable[Label],
    run: Callable[[Any], Diagnosis],
    *,
    seed: int = 0,
    name: str = "<labels>",
) -> EvalReport:
    """Diagnose every labelled trace with *run* (bundle → Diagnosis) and score the anchor."""
    results = []
    for label in labels:
        bundle = load_source(label.trace, fmt=label.format, task=label.task)
        diagnosis = run(bundle)
        results.append(_score(label, diagnosis, seed))
    return EvalReport(name, seed, tuple(results))


def _score(label: Label, diagnosis: Diagnosis, seed: int) -> TraceEval:
    ctx = diagnosis.context
    candidates = decisions(ctx)
    index = {v.id: i for i, v in enumerate(candidates)}
    picks = tuple(_pick(v, index, ctx) for v in candidates)
    if label.mistake_step is not None:
        step = label.mistake_step
    else:
        event = ctx.by_id.get(label.mistake_event or "")
        if event is None or event.id not in index:
            raise LabelsError(
                f"{label.trace}: mistake_event {label.mistake_event!r} is not an agent "
                "decision of the trace"
            )
        step = _step(event, index)
    anchor = diagnosis.anchor
    chosen = ctx.by_id.get(anchor.anchor) if anchor is not None else None
    none = Pick(None, None)
    return TraceEval(
        label,
        step,
        label.mistake_agent,
        picks,
        {
            "anchor": _pick(chosen, index, ctx) if chosen is not None else none,
            "random_seeded": random.Random(seed).choice(picks) if picks else none,
            "first": picks[0] if picks else none,
            "last": picks[-1] if picks else none,
        },
    )


def _pick(view: NodeView, index: dict[str, int], ctx: TraceContext) -> Pick:
    return Pick(_step(view, index), base_agent(view.agent), view.id)


def _step(view: NodeView, index: dict[str, int]) -> int:
    if view.step is not None:
        return view.step
    return index.get(view.id, -1)


def _same_agent(a: str, b: str | None) -> bool:
    if b is None:
        return False
    left, right = base_agent(a), base_agent(b)
    return (left or "").casefold() == (right or "").casefold()


def render_report(report: EvalReport) -> str:
    """The summary as a fixed-width table (plain text, deterministic)."""
    summary = report.summary()
    titles = {
        "anchor": "anchor (suspicious)",
        "random_expected": "random (expected)",
        "random_seeded": f"random (seed {report.seed})",
        "first": "first decision",
        "last": "last decision",
    }
    lines = [
        f"{len(report.traces)} labelled traces from {report.labels}",
        f"{'method':<22}{'step exact':>12}{'step ±1':>10}{'step ±3':>10}{'agent':>10}",
    ]
    for method in METHODS:
        row = summary[method]
        lines.append(
            f"{titles[method]:<22}{row['step_0']:>12.1%}{row['step_1']:>10.1%}"
            f"{row['step_3']:>10.1%}{row['agent']:>10.1%}"
        )
    present = report.when_anchored()
    lines.append(
        f"anchor present on {int(present['count'])}/{len(report.traces)} traces; on those: "
        f"step exact {present.get('step_0', 0.0):.1%}, agent {present.get('agent', 0.0):.1%}"
    )
    placed = report.placement()
    lines.append(
        "anchor vs label: "
        + ", ".join(f"{k} {v}" for k, v in placed.items())
        + " (before/at/after the labelled step, none = no eligible anchor)"
    )
    return "\n".join(lines) + "\n"
