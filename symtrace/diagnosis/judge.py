"""The optional semantic judge (Algorithm 3, lines 12–19).

A judge sees a triggered node, the rule-proposed categories and their evidence, and answers
(L^f, c̃_LLM, ξ): which proposed categories it confirms, a confidence, and a rationale. The
pipeline enforces L^f ⊆ L^r by intersection, whatever the judge says. What the judge sees has
evaluator information removed (the task is stripped by `parse_task`; rule evidence never reads
evaluator data). The rationale ξ is kept for audit and never placed in Δ.

Any OpenAI-compatible endpoint works (`OpenAIJudge`); any callable with the `Judge` signature
does too, which is how tests and users plug in other judges.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from symtrace.diagnosis.errors import JudgeError
from symtrace.diagnosis.symptoms import Category, Evidence, quote
from symtrace.diagnosis.templates import Templates, default_templates
from symtrace.diagnosis.view import NodeView, TraceContext
from symtrace.model.canonical import JSONValue, canonical_bytes

CONTEXT_NODES = 6  # preceding nodes shown to the judge
TEXT_LIMIT = 2000  # characters of the node's own text shown to the judge
_CATEGORY = re.compile(r"^\s*(C[1-4])\b", re.IGNORECASE)


@dataclass(frozen=True)
class JudgeRequest:
    """What the judge is shown for one triggered node. No evaluator information."""

    task: JSONValue
    node: dict[str, Any]
    preceding: tuple[dict[str, Any], ...]
    proposed: tuple[Category, ...]
    evidence: tuple[Evidence, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "node": self.node,
            "preceding_nodes": list(self.preceding),
            "proposed_categories": [
                {
                    "category": c.value,
                    "meaning": c.meaning,
                    "evidence": [e.to_json() for e in self.evidence if e.category is c],
                }
                for c in self.proposed
            ],
        }


@dataclass(frozen=True)
class JudgeVerdict:
    """(L^f, c̃_LLM, ξ). `confirmed` is already intersected with the proposed set."""

    confirmed: tuple[Category, ...]
    confidence: float
    rationale: str  # ξ: audit only, never part of Δ
    model: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "confirmed": [c.value for c in self.confirmed],
            "confidence": round(self.confidence, 6),
            "rationale": self.rationale,
            "model": self.model,
        }


class Judge(Protocol):
    """Anything that turns a JudgeRequest into a JudgeVerdict."""

    def __call__(self, request: JudgeRequest) -> JudgeVerdict: ...


def _summary(view: NodeView) -> dict[str, Any]:
    return {"id": view.id, "type": view.type.value, "agent": view.agent, "text": quote(view.text)}


def build_request(
    view: NodeView,
    ctx: TraceContext,
    proposed: tuple[Category, ...],
    evidence: tuple[Evidence, ...],
) -> JudgeRequest:
    node = _summary(view)
    node["text"] = quote(view.text, TEXT_LIMIT)
    task = {"text": ctx.task.text, "constraints": list(ctx.task.constraints)}
    if ctx.task.output.statement:
        task["output_requirement"] = ctx.task.output.statement
    preceding = tuple(_summary(v) for v in ctx.before(view)[-CONTEXT_NODES:])
    return JudgeRequest(task, node, preceding, proposed, evidence)


def parse_verdict(text: str, proposed: tuple[Category, ...], model: str | None) -> JudgeVerdict:
    """Read the judge's JSON answer; drop categories that were not proposed (L^f ⊆ L^r)."""
    data = _first_object(text)
    if data is None:
        raise JudgeError(f"judge answer has no JSON object: {quote(text, 200)!r}")
    raw = data.get("confirmed", data.get("categories"))
    if not isinstance(raw, list):
        raise JudgeError(f"judge answer lacks a 'confirmed' list: {quote(text, 200)!r}")
    named = set()
    for item in raw:
        match = _CATEGORY.match(str(item))
        if match is None:
            raise JudgeError(f"judge answer names an unknown category {item!r}")
        named.add(Category(match.group(1).upper()))
    confidence = data.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        raise JudgeError(f"judge answer lacks a numeric 'confidence': {quote(text, 200)!r}")
    confirmed = tuple(c for c in proposed if c in named)
    rationale = data.get("rationale")
    return JudgeVerdict(
        confirmed,
        min(1.0, max(0.0, float(confidence))),
        rationale if isinstance(rationale, str) else "",
        model,
    )


def chat_completion(client: httpx.Client, base_url: str, model: str, system: str, user: str, *,
                    api_key: str | None = None, timeout: float = 60.0,
                    json_mode: bool = False) -> str:
    """One temperature-0 chat completion at an OpenAI-compatible endpoint: the reply's text.
    Transport errors, HTTP errors and a body that is no chat completion are JudgeError."""
    body: dict[str, Any] = {
        "model": model,
        "temperature": 0,
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
    }
    if json_mode:
        body["response_format"] = {"type": "json_object"}
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    url = f"{base_url.rstrip('/')}/chat/completions"
    try:
        response = client.post(url, json=body, headers=headers, timeout=timeout)
    except httpx.HTTPError as exc:
        raise JudgeError(f"judge request to {url} failed: {exc}") from exc
    if response.status_code >= 400:
        raise JudgeError(
            f"judge at {url} answered HTTP {response.status_code}: {quote(response.text, 200)}"
        )
    try:
        message = response.json()["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise JudgeError(f"judge at {url} did not return a chat completion") from exc
    content = message.get("content") if isinstance(message, dict) else None
    return str(content or "")


def _first_object(text: str) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start >= 0:
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        start = text.find("{", start + 1)
    return None


class OpenAIJudge:
    """A judge backed by any OpenAI-compatible `POST {base_url}/chat/completions`.

    The httpx client is injectable (tests pass one with a mock transport); otherwise one is
    created on first use, so a surrounding `symtrace.record(...)` sees the judge's calls.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        client: httpx.Client | None = None,
        timeout: float = 60.0,
        json_mode: bool = False,
        templates: Templates | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.timeout = timeout
        self.json_mode = json_mode
        self.system_prompt = (templates or default_templates()).render("judge_system")
        self._client = client
        self._owns_client = client is None

    def __call__(self, request: JudgeRequest) -> JudgeVerdict:
        content = chat_completion(self.client, self.base_url, self.model, self.system_prompt,
                                  canonical_bytes(request.to_json()).decode(),
                                  api_key=self.api_key, timeout=self.timeout,
                                  json_mode=self.json_mode)
        return parse_verdict(content, request.proposed, self.model)

    @property
    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client()
        return self._client

    def close(self) -> None:
        if self._owns_client and self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> OpenAIJudge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        return f"{self.model} @ {self.base_url}"
