"""A task-aware stub LLM policy: follows a task's reference plan, with seeded mistakes.

`SuitePolicy` implements the stub server's Responder protocol. For the agent that holds the
tools it replays the plan against the tool history in the request (which step is done, which
failed) and decides the next call; the answer is computed from the tool results it actually
observed, so a wrong call yields a wrong answer naturally. Other roles (AG2 planner, CrewAI
reporter, Magentic-One orchestrator prompts) get plausible text that relays the worker's
`FINAL ANSWER:`.

Mistakes are drawn per decision with probability `1 - skill` (bad argument → service error;
premature answer without evidence; wrong entity; prose instead of the JSON format) and, after a
failed call, `stuck` (retry unchanged, then give up with a guess) — the C1–C4 symptoms of
docs/diagnosis.md. Repair text in the request suppresses a drawn mistake with a probability
that depends on what the text carries (see `SUPPRESSION`): a diagnosis Δ whose confirmed
categories address the mistake is the most effective, a rerun prompt changes nothing but the
sample. Every draw comes from sha256(seed, skill, canonical request): no call counter, so
replies do not depend on scheduling.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

import orjson

from symtrace.stub import request as rq
from symtrace.stub.reply import Reply, ToolCall
from symtrace_suite import plan
from symtrace_suite.policy.conversation import (
    Guidance,
    ToolUse,
    final_answers,
    find_task,
    guidance,
    tool_history,
)
from symtrace_suite.tasks import Task, load_tasks

__all__ = ["SUPPRESSION", "PolicyConfig", "SuitePolicy"]

MISTAKES = (
    ("bad_argument", 0.45),
    ("premature_final", 0.25),
    ("wrong_entity", 0.15),
    ("repeat_previous", 0.15),
)
# Which confirmed symptom categories "address" a mistake (a Δ naming them is relevant to it).
ADDRESSED_BY = {
    "bad_argument": frozenset({"C1", "C3"}),
    "retry_unchanged": frozenset({"C2", "C3"}),
    "give_up": frozenset({"C3", "C4"}),
    "premature_final": frozenset({"C3", "C4"}),
    "wrong_entity": frozenset(),
    "repeat_previous": frozenset({"C2"}),
    "prose_answer": frozenset({"C1"}),
}
# P(a drawn mistake is avoided) per guidance kind: (relevant, otherwise). Model parameters
# of the simulated LLM, not outcomes: a mistake still happens with the remaining probability.
SUPPRESSION = {
    "none": (0.0, 0.0),
    "rerun": (0.0, 0.0),
    "self_reflection": (0.35, 0.35),
    "critic": (0.6, 0.4),  # "relevant" for critic: unsupported claims (premature / give up)
    "generic": (0.45, 0.45),
    "suspicious": (0.9, 0.3),
}
_CRITIC_TARGETS = frozenset({"premature_final", "give_up"})


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    stuck: float = 0.55  # P(retry a failed call unchanged / give up) before suppression
    prose_share: float = 0.5  # P(prose answer) = prose_share * (1 - skill) at the final step
    max_failures: int = 3  # failed calls of one step before the agent gives up regardless


class SuitePolicy:
    """Responder for `symtrace.stub.server.StubLLM(responder=...)`; see the module docstring."""

    mode = "policy"

    def __init__(
        self,
        seed: int = 0,
        skill: float = 0.8,
        *,
        config: PolicyConfig | None = None,
        tasks: list[Task] | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an int, got {seed!r}")
        if not isinstance(skill, int | float) or not 0.0 <= skill <= 1.0:
            raise ValueError(f"skill must be a probability in [0, 1], got {skill!r}")
        self.seed = seed
        self.skill = float(skill)
        self.config = config or PolicyConfig()
        self._tasks = tasks if tasks is not None else load_tasks()

    def rng_for(self, body: dict[str, Any]) -> random.Random:
        digest = hashlib.sha256(f"suite-policy:{self.seed}:{self.skill!r}:".encode())
        digest.update(rq.request_digest(body))
        return random.Random(digest.hexdigest())

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        rng = self.rng_for(body)
        task = find_task(body, self._tasks)
        g = guidance(body)
        if rq.tools(body):
            return _Worker(self, body, task, g, rng).decide()
        return Reply(content=_talk(body, task, g))


def _talk(body: dict[str, Any], task: Task | None, g: Guidance) -> str:
    """Text for the roles without tools: orchestrator prompts, planner, reporter."""
    last = rq.last_user_text(body)
    steps = ", ".join(s["tool"] for s in task.plan) if task else "the available tools"
    if "pre-survey" in last:
        return (
            "1. GIVEN OR VERIFIED FACTS\n- The request names the entities to look up.\n"
            "2. FACTS TO LOOK UP\n- The values asked for, from the local services.\n"
            "3. FACTS TO DERIVE\n- The structured answer.\n4. EDUCATED GUESSES\n- None yet."
        )
    if "devise a short bullet-point plan" in last or "root cause of the failure" in last:
        return f"- assistant: call {steps}, then report the result in the requested JSON format."
    if "Please rewrite the following fact sheet" in last:
        return "UPDATED FACTS: the assistant's tool results so far are the verified facts."
    if "Recall we are working on the following request" in last:
        return _ledger(body, last, g)
    if "planner" in rq.system_text(body).lower():
        return f"PLAN: gather the data with {steps}; answer in the requested JSON format."
    # Relays (Magentic-One's final answer, the CrewAI reporter) restate the worker's answer
    # bare: a second "FINAL ANSWER" would read as a repeated final (C2) in every clean run.
    return _relayed_answer(body) or "unknown"


def _relayed_answer(body: dict[str, Any]) -> str | None:
    """The last `FINAL ANSWER:` a non-system message carries (instructions use `<…>`)."""
    for m in reversed(rq.messages(body)):
        if m.get("role") in rq.SYSTEM_ROLES:
            continue
        for final in reversed(final_answers(rq.content_text(m.get("content")))):
            if not final.startswith(("<", '"', "`")):
                return final.splitlines()[0].strip()
    return None


def _ledger(body: dict[str, Any], last: str, g: Guidance) -> str:
    names = last.split("(select from:", 1)[-1].split(")", 1)[0].strip() or "assistant"
    speaker = names.split(",")[0].strip()
    done = _relayed_answer(body) is not None
    instruction = "Solve the request with your tools and report the answer as JSON."
    if g.kind in ("suspicious", "generic"):
        instruction += " " + rq.last_user_text(body).strip().splitlines()[0]
    entry = {
        "is_request_satisfied": {
            "reason": "a final answer was given" if done else "no answer yet",
            "answer": done,
        },
        "is_in_loop": {"reason": "no repetition", "answer": False},
        "is_progress_being_made": {"reason": "steps are being taken", "answer": True},
        "next_speaker": {"reason": "it holds the tools", "answer": speaker},
        "instruction_or_question": {"reason": "next step", "answer": instruction},
    }
    return orjson.dumps(entry).decode()


class _Worker:
    """One decision of the agent that holds the tools."""

    def __init__(
        self,
        policy: SuitePolicy,
        body: dict[str, Any],
        task: Task | None,
        g: Guidance,
        rng: random.Random,
    ) -> None:
        self.p, self.body, self.task, self.g, self.rng = policy, body, task, g, rng
        self.offered = {t["name"]: t for t in rq.tools(body)}

    # -- mistakes ------------------------------------------------------------------------

    def _mistake(self, kind: str, probability: float) -> bool:
        """Draw a mistake of *kind*; guidance in the request may avoid it."""
        if self.rng.random() >= probability:
            return False
        relevant_p, other_p = SUPPRESSION[self.g.kind]
        if self.g.kind == "suspicious":
            relevant = bool(ADDRESSED_BY[kind] & self.g.categories)
        elif self.g.kind == "critic":
            relevant = kind in _CRITIC_TARGETS
        else:
            relevant = True
        return self.rng.random() >= (relevant_p if relevant else other_p)

    # -- the decision --------------------------------------------------------------------

    def decide(self) -> Reply:
        task = self.task
        if task is None or not all(s["tool"] in self.offered for s in task.plan):
            return _final_text("I cannot tell which task this is.", None)
        history = tool_history(self.body)
        results, index, fails, failed = _progress(task, history)
        p = 1.0 - self.p.skill
        if failed is not None:
            give_up = fails >= self.p.config.max_failures
            if give_up or self._mistake(
                "give_up" if fails >= 2 else "retry_unchanged", self.p.config.stuck
            ):
                if fails >= 2 or give_up:
                    return self._guess(
                        results,
                        f"the {failed.name} call keeps failing "
                        f"({_brief(failed.result)}); the data is not available",
                    )
                return _calls([(failed.name, failed.args)])
        if index < len(task.plan):
            step = task.plan[index]
            try:
                calls = plan.step_calls(step, results)
            except plan.Unresolved:
                return self._guess(results, "the service returned no matching data")
            if failed is None and self.rng.random() < p:
                kind = _weighted(self.rng, MISTAKES)
                if kind == "repeat_previous" and not any(use.ok for use in history):
                    kind = "bad_argument"  # nothing to repeat yet
                if self._mistake(kind, 1.0):
                    return self._apply(kind, step["tool"], calls, results, history)
            return _calls([(step["tool"], self._complete(step["tool"], a)) for a in calls])
        try:
            value = plan.answer(task.answer_spec, results)
        except plan.Unresolved:
            return self._guess(results, "part of the data was missing")
        if self._mistake("prose_answer", self.p.config.prose_share * p):
            return _final_text(None, _prose(value))
        return _final_text(None, orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode())

    def _apply(
        self,
        kind: str,
        tool: str,
        calls: list[dict[str, Any]],
        results: list[Any],
        history: list[ToolUse],
    ) -> Reply:
        if kind == "premature_final":
            return self._guess(results, None)
        if kind == "repeat_previous":  # lost track: ask for the same thing again
            last = [use for use in history if use.ok][-1]
            return _calls([(last.name, last.args)])
        first = dict(calls[0])
        changed = _perturb(first, self.rng, wrong_entity=kind == "wrong_entity")
        if changed is None:
            changed = _perturb(first, self.rng, wrong_entity=False) or first
        return _calls(
            [
                (tool, self._complete(tool, changed)),
                *((tool, self._complete(tool, c)) for c in calls[1:]),
            ]
        )

    def _complete(self, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        """Strict tool schemas require every property: send unused filters as ''."""
        spec = self.offered.get(tool) or {}
        props = (spec.get("parameters") or {}).get("properties") or {}
        required = set((spec.get("parameters") or {}).get("required") or [])
        out = dict(args)
        for name, prop in props.items():
            if name not in out and (spec.get("strict") or name in required):
                out[name] = prop.get("default", "") if isinstance(prop, dict) else ""
        return out

    def _guess(self, results: list[Any], excuse: str | None) -> Reply:
        assert self.task is not None
        value = _fabricate(self.task.answer_schema, self.rng)
        try:  # keep what was really observed, guess the rest
            real = plan.answer(self.task.answer_spec, results)
            value = real
        except plan.Unresolved:
            pass
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        if excuse is None:
            note = (
                "Here is the answer from what I know; to obtain the actual data I would "
                "still need to query the service."
            )
        else:
            note = f"Unable to access the data: {excuse}. This is my best estimate."
        return _final_text(note, text)


def _progress(task: Task, history: list[ToolUse]) -> tuple[list[Any], int, int, ToolUse | None]:
    """Match the tool history to the plan: step results, next step, failures of that step."""
    results: list[Any] = [None] * len(task.plan)
    index, fails, failed, collected = 0, 0, None, []

    def skip_empty(i: int) -> int:
        """A foreach over no items is done without a call (nothing to cancel, say)."""
        while i < len(task.plan) and "foreach" in task.plan[i]:
            try:
                if plan.step_calls(task.plan[i], results):
                    break
            except plan.Unresolved:
                break
            results[i] = []
            i += 1
        return i

    index = skip_empty(index)
    for use in history:
        if index >= len(task.plan):
            break
        step = task.plan[index]
        if use.name != step["tool"]:
            continue
        if not use.ok:
            fails, failed = fails + 1, use
            continue
        if "foreach" in step:
            collected.append(use.result)
            try:
                need = len(plan.step_calls(step, results))
            except plan.Unresolved:
                need = 0
            if len(collected) < need:
                continue
            results[index], collected = collected, []
        else:
            results[index] = use.result
        index, fails, failed = skip_empty(index + 1), 0, None
    return results, index, fails, failed


def _weighted(rng: random.Random, table: tuple[tuple[str, float], ...]) -> str:
    x = rng.random() * sum(w for _, w in table)
    for name, weight in table:
        x -= weight
        if x < 0:
            return name
    return table[-1][0]


_ID_KEYS = ("order_id", "customer_id", "slug", "sku")


def _perturb(
    args: dict[str, Any], rng: random.Random, *, wrong_entity: bool
) -> dict[str, Any] | None:
    """A corrupted copy of *args*: a plausible other entity, or an argument the service rejects."""
    out = dict(args)
    if wrong_entity:
        for key in _ID_KEYS:
            value = out.get(key)
            if isinstance(value, str) and value[-2:].isdigit():
                out[key] = value[:-2] + f"{(int(value[-2:]) + 1) % 100:02d}"
                return out
        for key in ("lat", "to_lat"):
            if isinstance(out.get(key), int | float):
                out[key] = round(out[key] + 0.04, 4)
                return out
        return None
    for key in _ID_KEYS:
        if isinstance(out.get(key), str):
            out[key] = f"__{key.upper()}__" if rng.random() < 0.5 else out[key].replace("-", "_")
            return out
    for lat, lon in (("lat", "lon"), ("from_lat", "from_lon"), ("to_lat", "to_lon")):
        if lat in out and lon in out:
            out[lat], out[lon] = out[lon], out[lat]
            return out
    for key in ("status", "kind"):
        if isinstance(out.get(key), str):
            out[key] = out[key] + "s"
            return out
    if "amount" in out:
        out["amount"] = "all"
        return out
    if isinstance(out.get("query"), str):
        out["query"] = ""
        return out
    return None


def _fabricate(schema: Any, rng: random.Random) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    if kind == "object":
        return {k: _fabricate(v, rng) for k, v in sorted((schema.get("properties") or {}).items())}
    if kind == "array":
        items = schema.get("items")
        return (
            [_fabricate(items, rng)]
            if isinstance(items, dict) and items.get("type") == "object"
            else []
        )
    if kind == "number":
        return round(rng.uniform(5, 500), 2)
    if kind == "integer":
        return rng.randint(1000, 9999)
    return "unknown"


def _prose(value: Any) -> str:
    if isinstance(value, dict):
        return "; ".join(f"the {k.replace('_', ' ')} is {v}" for k, v in value.items()) + "."
    return f"the answer is {value}."


def _brief(result: Any) -> str:
    if isinstance(result, dict) and isinstance(result.get("error"), dict):
        return str(result["error"].get("message", "error"))[:120]
    return str(result)[:120]


def _calls(calls: list[tuple[str, dict[str, Any]]]) -> Reply:
    return Reply(
        tool_calls=tuple(
            ToolCall(name, orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode())
            for name, args in calls
        )
    )


def _final_text(note: str | None, payload: str | None) -> Reply:
    lines = [note] if note else []
    lines.append(f"FINAL ANSWER: {payload if payload is not None else 'unknown'}")
    # A blank line ends the claimed output for the diagnosis view: TERMINATE is not part of it.
    return Reply(content="\n".join(lines) + "\n\nTERMINATE")
