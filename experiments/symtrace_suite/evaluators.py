"""Native evaluators: exact structured checks of an answer and of the services' state.

A task's `expected` is a tree of checks (`object`, `object_list`, `number` with tolerance,
`string` compared case- and whitespace-insensitively, `id_set` order-insensitive, `duration`
H:MM:SS with a tolerance in seconds). A mutating task also has `expected_state`: the shop state
after the run must equal the seeded state with exactly these changes, and nothing else.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_FINAL_MARKER = re.compile(r"(?i)final answer\s*:\s*")


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    reason: str


class EvaluatorSpecError(ValueError):
    """A task's evaluator spec is malformed (a packaging error, caught by the tests)."""


def parse_answer(answer: Any) -> Any:
    """A string answer is parsed as JSON, also after a `FINAL ANSWER:` marker; else kept."""
    if not isinstance(answer, str):
        return answer
    text = answer.strip()
    markers = list(_FINAL_MARKER.finditer(text))
    if markers:
        text = text[markers[-1].end() :].strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    decoder = json.JSONDecoder()
    for start in (i for i, ch in enumerate(text) if ch in "[{"):
        try:
            return decoder.raw_decode(text, start)[0]
        except ValueError:
            continue
    return answer


def check(spec: Mapping[str, Any], value: Any, where: str = "answer") -> str | None:
    """None when *value* satisfies *spec*, else the reason it does not."""
    kind = spec.get("kind")
    checker = _CHECKS.get(kind)  # type: ignore[arg-type]
    if checker is None:
        raise EvaluatorSpecError(f"unknown check kind {kind!r}")
    return checker(spec, value, where)


def _number(spec: Mapping[str, Any], value: Any, where: str) -> str | None:
    if isinstance(value, str):
        try:
            value = float(value.replace(",", "").strip())
        except ValueError:
            return f"{where}: expected a number, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return f"{where}: expected a number, got {value!r}"
    if abs(value - spec["value"]) > spec.get("tol", 0.0) + 1e-9:
        return f"{where}: {value!r} is not {spec['value']!r} (± {spec.get('tol', 0.0)})"
    return None


def _norm(text: str) -> str:
    return " ".join(text.split()).casefold()


def _string(spec: Mapping[str, Any], value: Any, where: str) -> str | None:
    if not isinstance(value, str):
        return f"{where}: expected a string, got {value!r}"
    if _norm(value) != _norm(spec["value"]):
        return f"{where}: {value!r} is not {spec['value']!r}"
    return None


def _id_set(spec: Mapping[str, Any], value: Any, where: str) -> str | None:
    if not isinstance(value, list) or not all(isinstance(v, str | int) for v in value):
        return f"{where}: expected a list of ids, got {value!r}"
    got, want = {str(v) for v in value}, {str(v) for v in spec["value"]}
    if len(got) != len(value) or got != want:
        missing, extra = sorted(want - got), sorted(got - want)
        return f"{where}: ids differ (missing {missing}, unexpected {extra}, or duplicates)"
    return None


def _seconds(text: Any) -> int | None:
    if not isinstance(text, str):
        return None
    parts = text.strip().split(":")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    h, m, s = (int(p) for p in parts)
    return h * 3600 + m * 60 + s if m < 60 and s < 60 else None


def _duration(spec: Mapping[str, Any], value: Any, where: str) -> str | None:
    got = _seconds(value)
    if got is None:
        return f"{where}: expected a duration H:MM:SS, got {value!r}"
    want = _seconds(spec["value"])
    if want is None:
        raise EvaluatorSpecError(f"bad expected duration {spec['value']!r}")
    if abs(got - want) > spec.get("tol_s", 0):
        return f"{where}: {value} is not {spec['value']} (± {spec.get('tol_s', 0)} s)"
    return None


def _object(spec: Mapping[str, Any], value: Any, where: str) -> str | None:
    if not isinstance(value, dict):
        return f"{where}: expected a JSON object, got {value!r}"
    fields = spec["fields"]
    extra = sorted(set(value) - set(fields))
    if extra:
        return f"{where}: unexpected keys {extra} (only {sorted(fields)})"
    for key, sub in fields.items():
        if key not in value:
            return f"{where}: missing key {key!r}"
        reason = check(sub, value[key], f"{where}.{key}")
        if reason:
            return reason
    return None


def _object_list(spec: Mapping[str, Any], value: Any, where: str) -> str | None:
    if not isinstance(value, list):
        return f"{where}: expected a list of objects, got {value!r}"
    items = spec["items"]
    if len(value) != len(items):
        return f"{where}: expected {len(items)} item(s), got {len(value)}"
    if spec.get("ordered", True):
        for i, (sub, item) in enumerate(zip(items, value, strict=True)):
            reason = check(sub, item, f"{where}[{i}]")
            if reason:
                return reason
        return None
    unmatched = list(value)
    for i, sub in enumerate(items):
        hit = next((v for v in unmatched if check(sub, v) is None), None)
        if hit is None:
            return f"{where}: no item matches expected item {i}"
        unmatched.remove(hit)
    return None


_CHECKS = {
    "number": _number,
    "string": _string,
    "id_set": _id_set,
    "duration": _duration,
    "object": _object,
    "object_list": _object_list,
}


def expected_state(initial: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """The shop state a mutating task must leave: the seeded state with *changes* applied."""
    shop = copy.deepcopy(dict(initial))
    for order_id, fields in changes.get("orders", {}).items():
        shop["orders"][order_id].update(fields)
    shop["refunds"] = [*shop.get("refunds", []), *changes.get("refunds", [])]
    return shop


def state_diff(want: Mapping[str, Any], got: Mapping[str, Any]) -> str | None:
    """None when the shop states agree (amounts to the cent), else the first difference."""
    orders_w, orders_g = want.get("orders", {}), got.get("orders", {})
    for order_id in sorted(set(orders_w) | set(orders_g)):
        w, g = orders_w.get(order_id), orders_g.get(order_id)
        if w is None or g is None:
            return f"state: order {order_id} {'appeared' if w is None else 'disappeared'}"
        for key in sorted(set(w) | set(g)):
            a, b = w.get(key), g.get(key)
            same = (
                abs(a - b) < 0.005
                if isinstance(a, int | float) and isinstance(b, int | float)
                else a == b
            )
            if not same:
                return f"state: order {order_id} {key} is {b!r}, expected {a!r}"
    refunds_w = [(r["order_id"], round(r["amount"], 2)) for r in want.get("refunds", [])]
    refunds_g = [(r["order_id"], round(r["amount"], 2)) for r in got.get("refunds", [])]
    if sorted(refunds_w) != sorted(refunds_g):
        return f"state: refunds are {refunds_g}, expected {refunds_w}"
    return None
