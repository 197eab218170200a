"""A second, tiny benchmark defined outside `symtrace_suite`: the study's plug-in surface
(`symtrace_study.benchmark`) end to end with its own tasks, environment, evaluator, MAS and
stub policy.

The environment is a JSON file (a counter and a note) named by $TOYBENCH_STATE; the tools
read and change it; the MAS is a one-agent openai-SDK loop. Config: `"benchmark":
"tests.experiments.toybench:BENCHMARK"`.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from symtrace.stub import request as rq
from symtrace.stub.reply import Reply, ToolCall

INITIAL = {"counter": 0, "note": "blue heron"}
STATE_ENV = "TOYBENCH_STATE"


@dataclass(frozen=True)
class ToyTask:
    id: str
    prompt: str
    mutates: bool
    tool: str
    arguments: dict[str, Any]
    expected: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "prompt": self.prompt, "mutates": self.mutates,
                "tools": ["toy_read", "toy_add"]}


TASKS = (
    ToyTask("add-3", "Add 3 to the counter with toy_add, then report the new counter as "
            'JSON {"value": N}.', True, "toy_add", {"amount": 3}, {"value": 3}),
    ToyTask("note", 'Read the note with toy_read and report it as JSON {"note": TEXT}.',
            False, "toy_read", {}, {"note": "blue heron"}),
)


@dataclass(frozen=True)
class Verdict:
    passed: bool
    reason: str


class ToyEnvironment:
    def __init__(self) -> None:
        self._dir = Path(tempfile.mkdtemp(prefix="toybench-"))
        self.path = self._dir / "state.json"
        self.reset()

    def env(self) -> dict[str, str]:
        return {STATE_ENV: str(self.path)}

    def reset(self) -> None:
        self.path.write_text(json.dumps(INITIAL))

    def state(self) -> dict[str, Any]:
        return json.loads(self.path.read_text())

    def restore_prefix(self, bundle: Any, anchor: str) -> list[tuple[str, dict[str, Any]]]:
        """Reset, then re-apply every toy_add the recorded run made before *anchor*."""
        from tests.experiments.toybench.tools import apply_add

        self.reset()
        limit = bundle.event(anchor).position
        done = []
        for event in bundle.events:
            request = event.request if isinstance(event.request, dict) else {}
            if (event.position < limit and event.type.value == "tool_call"
                    and request.get("tool") == "toy_add"):
                apply_add(self.path, **request["arguments"])
                done.append(("toy_add", request["arguments"]))
        return done

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


class ToyPolicy:
    """The stub's replies: call the task's tool (or, with probability 1 - skill, answer
    without it — a guess), then answer from the tool result. Pure function of (seed, request)."""

    def __init__(self, seed: int, skill: float) -> None:
        self.seed, self.skill = seed, skill

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        text = rq.all_text(body)
        task = next((t for t in TASKS if t.prompt in text), None)
        if task is None:
            return Reply(content="FINAL ANSWER: null")
        results = [rq.content_text(m.get("content")) for m in rq.messages(body)
                   if m.get("role") == "tool"]  # done once: answer (also after a Δ)
        if results:
            value = json.loads(results[-1])
            key = next(iter(task.expected))
            answer = {key: value.get(key if key == "note" else "counter")}
            return Reply(content="FINAL ANSWER: " + json.dumps(answer))
        digest = hashlib.sha256(f"{self.seed}|{self.skill}|{text}".encode()).digest()
        if digest[0] / 255 > self.skill:
            return Reply(content='FINAL ANSWER: {"value": 0}' if task.mutates
                         else 'FINAL ANSWER: {"note": "unknown"}')
        return Reply(tool_calls=(ToolCall(task.tool, json.dumps(task.arguments)),))


class ToyBenchmark:
    name = "toybench"

    def tasks(self) -> tuple[ToyTask, ...]:
        return TASKS

    def open_environment(self) -> ToyEnvironment:
        return ToyEnvironment()

    def evaluate(self, task: ToyTask, answer: Any, state: Any) -> Verdict:
        if answer != task.expected:
            return Verdict(False, f"answer {answer!r} is not {task.expected!r}")
        if task.mutates and (state or {}).get("counter") != task.expected["value"]:
            return Verdict(False, f"state: counter is {(state or {}).get('counter')!r}")
        return Verdict(True, "answer matches")

    def mas_commands(self) -> dict[str, list[str]]:
        return {"toy": ["python", "-m", "tests.experiments.toybench.mas", "--task", "{task}"]}

    def stub_responder(self, seed: int, skill: float) -> ToyPolicy:
        return ToyPolicy(seed, skill)


BENCHMARK = ToyBenchmark()
