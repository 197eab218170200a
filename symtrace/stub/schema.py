"""Plausible values for a JSON Schema, drawn from a caller's random generator.

Tool arguments and ``response_format`` JSON must parse and validate on the client side or the
agent under test fails for reasons that have nothing to do with it. This is best effort, not a
validator: required fields, types, enums, consts, numeric bounds, string/array lengths, a few
string formats, ``$ref`` into ``$defs``/``definitions`` and ``anyOf``/``oneOf``/``allOf``.
"""

from __future__ import annotations

import math
import random
import uuid
from typing import Any

VOCABULARY: tuple[str, ...] = (
    "alpha", "report", "paris", "budget", "draft", "summary", "weather", "orange",
    "ticket", "london", "invoice", "python", "meeting", "review", "delta", "notes",
)  # fmt: skip

MAX_DEPTH = 6


def generate(
    schema: object,
    rng: random.Random,
    words: tuple[str, ...] | list[str] = (),
    *,
    all_properties: bool = False,
) -> Any:
    """A value conforming (best effort) to *schema*.

    *words* are preferred for strings so arguments echo the conversation; optional object
    properties are included with probability 1/2, or always with *all_properties*.
    """
    gen = _Generator(schema if isinstance(schema, dict) else {}, rng, words, all_properties)
    return gen.value(schema, 0)


class _Generator:
    def __init__(
        self,
        root: dict[str, Any],
        rng: random.Random,
        words: tuple[str, ...] | list[str],
        all_properties: bool,
    ) -> None:
        self.root = root
        self.rng = rng
        self.words = tuple(words) or VOCABULARY
        self.all_properties = all_properties

    def value(self, schema: object, depth: int) -> Any:
        if not isinstance(schema, dict):
            return self.string({})
        schema = self.resolve(schema)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.rng.choice(schema["enum"])
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                non_null = [o for o in options if not _is_null_schema(o)]
                return self.value(self.rng.choice(non_null or options), depth + 1)
        if isinstance(schema.get("allOf"), list):
            merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
            for part in schema["allOf"]:
                if isinstance(part, dict):
                    part = self.resolve(part)
                    props = {**merged.get("properties", {}), **part.get("properties", {})}
                    required = [*merged.get("required", []), *part.get("required", [])]
                    merged = {**merged, **part, "properties": props, "required": required}
            return self.value(merged, depth + 1)
        kind = self.kind(schema)
        if depth >= MAX_DEPTH and kind in ("object", "array"):
            return {} if kind == "object" else []
        if kind == "object":
            return self.object(schema, depth)
        if kind == "array":
            return self.array(schema, depth)
        if kind == "integer":
            return self.integer(schema)
        if kind == "number":
            return self.number(schema)
        if kind == "boolean":
            return self.rng.random() < 0.5
        if kind == "null":
            return None
        return self.string(schema)

    def resolve(self, schema: dict[str, Any]) -> dict[str, Any]:
        seen = 0
        while isinstance(schema.get("$ref"), str) and seen < 16:
            ref = schema["$ref"]
            target: object = self.root
            if not ref.startswith("#"):
                return {}
            for part in ref.lstrip("#").strip("/").split("/"):
                if not part:
                    continue
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            if not isinstance(target, dict):
                return {}
            schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
            seen += 1
        return schema

    def kind(self, schema: dict[str, Any]) -> str:
        raw = schema.get("type")
        if isinstance(raw, list):
            non_null = [t for t in raw if t != "null"]
            raw = self.rng.choice(non_null) if non_null else "null"
        if isinstance(raw, str):
            return raw
        if "properties" in schema or "additionalProperties" in schema:
            return "object"
        if "items" in schema or "prefixItems" in schema:
            return "array"
        if "minimum" in schema or "maximum" in schema:
            return "number"
        return "string"

    def object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        required = schema.get("required")
        required = set(required) if isinstance(required, list) else set()
        out: dict[str, Any] = {}
        for name, sub in props.items():
            if name in required or self.all_properties or self.rng.random() < 0.5:
                out[name] = self.value(sub, depth + 1)
        for name in required:
            if isinstance(name, str) and name not in out:
                out[name] = self.string({})
        extra = schema.get("additionalProperties")
        if not props and isinstance(extra, dict):
            out[self.rng.choice(self.words)] = self.value(extra, depth + 1)
        return out

    def array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list):
            return [self.value(s, depth + 1) for s in prefix]
        lo = _int(schema.get("minItems"), 1)
        hi = max(lo, min(_int(schema.get("maxItems"), lo + 2), lo + 2))
        return [
            self.value(schema.get("items", {}), depth + 1) for _ in range(self.rng.randint(lo, hi))
        ]

    def integer(self, schema: dict[str, Any]) -> int:
        lo, hi = _bounds(schema, integral=True)
        return self.rng.randint(int(lo), int(hi))

    def number(self, schema: dict[str, Any]) -> float:
        lo, hi = _bounds(schema, integral=False)
        return round(self.rng.uniform(lo, hi), 2) if hi > lo else float(lo)

    def string(self, schema: dict[str, Any]) -> str:
        fmt = schema.get("format")
        rng = self.rng
        if fmt == "date":
            text = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        elif fmt == "date-time":
            day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
            text = f"{day}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"
        elif fmt == "time":
            text = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00"
        elif fmt == "email":
            text = f"{rng.choice(self.words)}@example.com"
        elif fmt in ("uri", "url"):
            text = f"https://example.com/{rng.choice(self.words)}"
        elif fmt == "uuid":
            text = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        else:
            text = " ".join(rng.choice(self.words) for _ in range(rng.randint(1, 3)))
        min_len = _int(schema.get("minLength"), 0)
        max_len = _int(schema.get("maxLength"), 0)
        while len(text) < min_len:
            text += " " + rng.choice(self.words)
        if max_len and len(text) > max_len:
            text = text[:max_len]
        return text


def _is_null_schema(schema: object) -> bool:
    return isinstance(schema, dict) and schema.get("type") == "null"


def _int(raw: object, default: int) -> int:
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw >= 0 else default


def _num(raw: object) -> float | None:
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        return float(raw)
    return None


def _bounds(schema: dict[str, Any], *, integral: bool) -> tuple[float, float]:
    step = 1.0 if integral else 0.01
    lo = _num(schema.get("minimum"))
    hi = _num(schema.get("maximum"))
    xlo = _num(schema.get("exclusiveMinimum"))
    xhi = _num(schema.get("exclusiveMaximum"))
    if xlo is not None:
        lo = max(lo, xlo + step) if lo is not None else xlo + step
    if xhi is not None:
        hi = min(hi, xhi - step) if hi is not None else xhi - step
    if lo is None and hi is None:
        lo, hi = (1.0, 100.0) if integral else (0.0, 100.0)
    elif lo is None:
        lo = hi - 100.0
    elif hi is None:
        hi = lo + 100.0
    if integral:
        lo, hi = float(math.ceil(lo)), float(math.floor(hi))
    return (lo, hi) if hi >= lo else (lo, lo)
