"""The reference-plan language of data/tasks.json, evaluated against observed tool results.

A plan is a list of steps `{"tool", "args"}` (or `{"tool", "foreach": REF, "args"}` for one
call per item). Argument values and answer expressions may be references `"$sN.path"` into the
result of step N (`a.b[0].c`, `orders[*].id` for every item) or `"$item"` inside a foreach. The
answer spec maps keys to a reference, a literal, or one operation: `sum`, `list`, `sub`,
`sorted_objects` (with `by` and `keys`) and `object_list`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_TOKEN = re.compile(r"\.?([A-Za-z_][A-Za-z0-9_]*)|\[(\*|\d+)\]")


class Unresolved(LookupError):
    """A reference points at a step not done yet, or at data the result does not have."""


def resolve(ref: Any, results: Sequence[Any], item: Any = None) -> Any:
    """The value of *ref* (a `$` reference or a literal) given the step *results*."""
    if not isinstance(ref, str) or not ref.startswith("$"):
        return ref
    if ref == "$item":
        return item
    head, _, path = ref[1:].partition(".")
    if not (head.startswith("s") and head[1:].isdigit()):
        raise Unresolved(f"bad reference {ref!r}")
    index = int(head[1:])
    if index >= len(results) or results[index] is None:
        raise Unresolved(f"step {index} has no result yet")
    return _walk(results[index], path, ref)


def _walk(value: Any, path: str, ref: str) -> Any:
    values, spread = [value], False
    for match in _TOKEN.finditer(path):
        key, idx = match.groups()
        nxt = []
        for v in values:
            if key is not None:
                if not isinstance(v, Mapping) or key not in v:
                    raise Unresolved(f"{ref}: no {key!r}")
                nxt.append(v[key])
            elif idx == "*":
                if not isinstance(v, list):
                    raise Unresolved(f"{ref}: not a list")
                nxt.extend(v)
                spread = True
            else:
                if not isinstance(v, list) or int(idx) >= len(v):
                    raise Unresolved(f"{ref}: no item {idx}")
                nxt.append(v[int(idx)])
        values = nxt
    return values if spread else values[0]


def step_calls(step: Mapping[str, Any], results: Sequence[Any]) -> list[dict[str, Any]]:
    """The argument dicts of the call(s) step makes, given earlier results."""
    if "foreach" in step:
        items = resolve(step["foreach"], results)
        if not isinstance(items, list):
            raise Unresolved("foreach over a non-list")
        return [{k: resolve(v, results, item) for k, v in step["args"].items()} for item in items]
    return [{k: resolve(v, results) for k, v in step["args"].items()}]


def answer(spec: Any, results: Sequence[Any]) -> Any:
    """The structured answer the plan's results give (raises Unresolved when data is missing)."""
    if isinstance(spec, Mapping) and "object_list" in spec:
        return [answer(item, results) for item in spec["object_list"]]
    if isinstance(spec, Mapping) and "sorted_objects" in spec:
        return _sorted_objects(spec, results)
    if isinstance(spec, Mapping) and not _is_op(spec):
        return {key: _expr(value, results) for key, value in spec.items()}
    return _expr(spec, results)


def _is_op(spec: Mapping[str, Any]) -> bool:
    return len(spec) == 1 and next(iter(spec)) in ("sum", "list", "sub")


def _expr(expr: Any, results: Sequence[Any]) -> Any:
    if isinstance(expr, Mapping) and _is_op(expr):
        ((op, arg),) = expr.items()
        if op == "sum":
            return round(sum(float(v) for v in _as_list(resolve(arg, results))), 2)
        if op == "list":
            return list(_as_list(resolve(arg, results)))
        a, b = (resolve(x, results) for x in arg)
        return round(float(a) - float(b), 2)
    return resolve(expr, results)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _sorted_objects(spec: Mapping[str, Any], results: Sequence[Any]) -> list[dict[str, Any]]:
    rows = _as_list(resolve(spec["sorted_objects"], results))
    keys, by = spec["keys"], spec["by"]
    picked = [{k: row.get(k) for k in keys} for row in rows if isinstance(row, Mapping)]
    return sorted(picked, key=lambda r: (r[by], str(r)))
