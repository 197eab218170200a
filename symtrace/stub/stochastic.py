"""Stochastic mode: an answer generator that behaves like a sampling LLM, without one.

Record/replay is only interesting when the live system is nondeterministic, so this mode is:
unseeded, identical requests get different texts, tool choices and arguments; seeded, the
sequence of answers is a function of (seed, call index, request), hence reproducible from
server start; ``temperature == 0`` plus a request ``seed`` makes the answer a function of the
request alone. Agent loops terminate because a tool result makes a text answer likely, and
texts end with ``TERMINATE`` with a configurable probability.
"""

from __future__ import annotations

import hashlib
import random
import re
import secrets
from dataclasses import dataclass
from typing import Any

import orjson

from symtrace.stub import request as rq
from symtrace.stub import schema
from symtrace.stub.reply import Reply, ToolCall

TERMINATE = "TERMINATE"

_TEMPLATES: tuple[str, ...] = (
    "I looked into {a} and {b}.",
    "The {a} seems closely related to {b}.",
    "Here is what I found about {a}: it depends on {b}.",
    "Considering {a}, the next step is to review {b}.",
    "{A} is settled; {b} still needs attention.",
    "In short, {a} looks fine, but {b} is worth a second look.",
    "My recommendation is to focus on {a} before {b}.",
    "After checking {a}, I would compare it with {b}.",
)
_AFTER_TOOL: tuple[str, ...] = (
    "Based on the tool result, {a} is {b}.",
    "The tool returned {a}, which answers the question about {b}.",
    "Thanks, with {a} in hand the {b} is clear.",
)
_STOPWORDS_TEXT = (
    "the and for are but not you your with this that what when where which who how can "
    "could would should will from into about please tell give have has had was were been "
    "its them they their there then than also just like some any all our out use"
)
_STOPWORDS = frozenset(_STOPWORDS_TEXT.split())
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]{2,}")


@dataclass(frozen=True, slots=True)
class StochasticConfig:
    """Probabilities of the sampling behaviour; all in [0, 1]."""

    tool_probability: float = 0.6  # call a tool when tools are offered
    tool_probability_after_result: float = 0.25  # ... when the last message is a tool result
    parallel_probability: float = 0.3  # two parallel calls, when 2+ tools are offered
    terminate_probability: float = 0.3  # end a text answer with TERMINATE

    def __post_init__(self) -> None:
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")


class StochasticResponder:
    """Draws a fresh plausible answer per request; see the module docstring for determinism."""

    mode = "stochastic"

    def __init__(self, seed: int | None = None, config: StochasticConfig | None = None) -> None:
        self.seed = seed
        self.config = config or StochasticConfig()

    def rng_for(self, body: dict[str, Any], call_index: int) -> random.Random:
        request_seed = body.get("seed")
        if body.get("temperature") == 0 and isinstance(request_seed, int):
            digest = hashlib.sha256(rq.request_digest(body) + str(request_seed).encode())
            return random.Random(digest.hexdigest())
        if self.seed is not None:
            return random.Random(f"symtrace-stub:{self.seed}:{call_index}")
        return random.Random(secrets.randbits(128))

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        rng = self.rng_for(body, call_index)
        words = keywords(rq.last_user_text(body))
        calls = self._tool_calls(body, rng, words)
        if calls:
            return Reply(tool_calls=calls)
        fmt = body.get("response_format")
        if isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema"):
            return Reply(content=_json_content(fmt, rng, words))
        return Reply(content=self._text(body, rng, words))

    def _tool_calls(
        self, body: dict[str, Any], rng: random.Random, words: list[str]
    ) -> tuple[ToolCall, ...]:
        offered = rq.tools(body)
        choice = body.get("tool_choice", "auto")
        if not offered or choice == "none":
            return ()
        if isinstance(choice, dict):
            wanted = (choice.get("function") or {}).get("name")
            named = [t for t in offered if t["name"] == wanted]
            if named:
                return (self._call(named[0], rng, words),)
        if choice != "required":
            p = self.config.tool_probability
            if rq.last_is_tool_result(body):
                p = min(p, self.config.tool_probability_after_result)
            if rng.random() >= p:
                return ()
        count = 1
        parallel_ok = body.get("parallel_tool_calls", True) is not False
        if parallel_ok and len(offered) > 1 and rng.random() < self.config.parallel_probability:
            count = 2
        return tuple(self._call(tool, rng, words) for tool in rng.sample(offered, count))

    def _call(self, tool: dict[str, Any], rng: random.Random, words: list[str]) -> ToolCall:
        params = tool.get("parameters") or {"type": "object", "properties": {}}
        args = schema.generate(params, rng, words, all_properties=bool(tool.get("strict")))
        if not isinstance(args, dict):
            args = {"value": args}
        return ToolCall(tool["name"], orjson.dumps(args).decode())

    def _text(self, body: dict[str, Any], rng: random.Random, words: list[str]) -> str:
        pool = words or list(schema.VOCABULARY)
        sentences = []
        results = rq.trailing_tool_results(body)
        if results:
            result_words = keywords(" ".join(results)) or [results[0][:40] or "nothing"]
            template = rng.choice(_AFTER_TOOL)
            sentences.append(_fill(template, rng.choice(result_words), rng.choice(pool)))
        for _ in range(rng.randint(1, 3)):
            sentences.append(_fill(rng.choice(_TEMPLATES), rng.choice(pool), rng.choice(pool)))
        text = " ".join(sentences)
        if rng.random() < self.config.terminate_probability:
            text += f" {TERMINATE}"
        return text


def keywords(text: str) -> list[str]:
    """Distinct content words of *text*, in order (what a reply should 'talk about')."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text):
        word = match.group(0).lower()
        if word not in _STOPWORDS and word != TERMINATE.lower():
            seen.setdefault(word, None)
    return list(seen)


def _fill(template: str, a: str, b: str) -> str:
    return template.format(a=a, b=b, A=a[:1].upper() + a[1:])


def _json_content(fmt: dict[str, Any], rng: random.Random, words: list[str]) -> str:
    if fmt.get("type") == "json_schema":
        spec = fmt.get("json_schema") or {}
        body_schema = spec.get("schema") if isinstance(spec, dict) else None
        if isinstance(body_schema, dict):
            value = schema.generate(body_schema, rng, words, all_properties=True)
            return orjson.dumps(value).decode()
    pool = words or list(schema.VOCABULARY)
    answer = _fill(rng.choice(_TEMPLATES), rng.choice(pool), rng.choice(pool))
    return orjson.dumps({"answer": answer}).decode()
