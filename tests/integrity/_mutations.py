"""Generated single-field mutations of a sealed bundle, each with the place verify must name.

Every case changes exactly one thing, written back the way the writer writes it (canonical
event lines, pretty manifest), so the only reason to reject the bundle is the change itself:

- every leaf of the manifest (whatever fields it has), and the seal's own fields;
- every top-level field of every event line (parents with their edge kinds, positions, ...);
- every blob's content and every blob's ref (the pack's index);
- every line of stdout.txt and of sums.jsonl (the locator itself).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

FILES = ("manifest.json", "events.jsonl", "blobs.jsonl", "sums.jsonl", "stdout.txt")
Files = dict[str, bytes]


@dataclass(frozen=True)
class Mutation:
    bundle: Path
    kind: str  # the field kind, e.g. "event.agent_action.parents", "manifest.config.command"
    expected: str  # the place verify must name, e.g. "events[3].parents"
    apply: Callable[[Files], Files]

    @property
    def id(self) -> str:
        return f"{self.bundle.name}:{self.expected}"


def read(bundle: Path) -> Files:
    return {name: (bundle / name).read_bytes() for name in FILES if (bundle / name).exists()}


def write(files: Files, target: Path) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (target / name).write_bytes(data)


def changed(value: Any) -> Any:
    """A different value of the same JSON shape (so only the content, not the type, differs)."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        return value[:-1] + ("y" if value.endswith("x") else "x") if value else "x"
    if isinstance(value, list):
        return [*value[:-1], changed(value[-1])] if value else ["x"]
    if isinstance(value, dict):
        if not value:
            return {"x": 1}
        key = sorted(value)[-1]
        return {**value, key: changed(value[key])}
    return "x"  # None


def _pretty(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def _canon(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _set_path(data: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    head, *rest = path
    copy = dict(data)
    copy[head] = _set_path(data[head], rest, value) if rest else value
    return copy


def _leaves(value: dict[str, Any], prefix: list[str]) -> Iterator[list[str]]:
    for key, item in value.items():
        if isinstance(item, dict) and item:
            yield from _leaves(item, [*prefix, key])
        else:
            yield [*prefix, key]


def _get(data: Any, path: list[str]) -> Any:
    for key in path:
        data = data[key]
    return data


def _replace_line(data: bytes, index: int, new: bytes) -> bytes:
    lines = data.split(b"\n")
    lines[index] = new
    return b"\n".join(lines)


def generate(bundle: Path) -> Iterator[Mutation]:
    files = read(bundle)
    manifest = orjson.loads(files["manifest.json"])
    yield from _manifest_mutations(bundle, manifest)
    yield from _event_mutations(bundle, files["events.jsonl"])
    yield from _pack_mutations(bundle, files["blobs.jsonl"])
    for name in ("stdout.txt", "sums.jsonl"):
        if name in files:
            yield from _line_mutations(bundle, name, files[name])


def _manifest_mutations(bundle: Path, manifest: dict[str, Any]) -> Iterator[Mutation]:
    for path in _leaves(manifest, []):
        dotted = ".".join(path)
        new = changed(_get(manifest, path))
        if path[0] == "format_version":
            continue  # a different version is refused as unsupported, not located
        expected = f"manifest.{dotted}"

        def apply(files: Files, path: list[str] = path, new: Any = new) -> Files:
            data = orjson.loads(files["manifest.json"])
            return {**files, "manifest.json": _pretty(_set_path(data, path, new))}

        group = path[0] if path[0] != "digest" else dotted
        yield Mutation(bundle, f"manifest.{group}", expected, apply)


def _event_mutations(bundle: Path, events: bytes) -> Iterator[Mutation]:
    for index, line in enumerate(events.split(b"\n")[:-1]):
        record = orjson.loads(line)
        for key in sorted(record):
            new = changed(record[key])
            # the edge kind, the easiest field to miss (a format-3 call's parents are the
            # inputs of their derivation: changed() changes its `seen`)
            if key == "parents" and isinstance(record[key], list) and record[key]:
                edge = record[key][0]
                kind = "control" if edge["kind"] == "data" else "data"
                new = [{**edge, "kind": kind}, *record[key][1:]]

            def apply(files: Files, index: int = index, key: str = key, new: Any = new) -> Files:
                data = orjson.loads(files["events.jsonl"].split(b"\n")[index])
                line = _canon({**data, key: new})
                return {**files, "events.jsonl": _replace_line(files["events.jsonl"], index, line)}

            yield Mutation(bundle, f"event.{record['type']}.{key}", f"events[{index}].{key}", apply)


def _pack_mutations(bundle: Path, pack: bytes) -> Iterator[Mutation]:
    for index, line in enumerate(pack.split(b"\n")[:-1]):
        ref, _, body = line.partition(b" ")
        value = changed(orjson.loads(body))
        new_body = _canon(value)
        new_ref = b"sha256:" + hashlib.sha256(b"other" + body).hexdigest().encode()
        where = f"blobs.jsonl line {index + 1}"

        variants = (("content", ref + b" " + new_body), ("index", new_ref + b" " + body))
        for kind, line_now in variants:

            def apply(files: Files, index: int = index, line: bytes = line_now) -> Files:
                return {**files, "blobs.jsonl": _replace_line(files["blobs.jsonl"], index, line)}

            yield Mutation(bundle, f"blob.{kind}", where, apply)


def _line_mutations(bundle: Path, name: str, data: bytes) -> Iterator[Mutation]:
    lines = data.split(b"\n")
    for index, line in enumerate(lines):
        if name == "sums.jsonl" and not line:
            continue
        if name == "sums.jsonl":
            new = _canon(changed(orjson.loads(line)))
        else:
            new = line[:-1] + (b"?" if line.endswith(b"!") else b"!") if line else b"!"

        def apply(files: Files, index: int = index, new: bytes = new) -> Files:
            return {**files, name: _replace_line(files[name], index, new)}

        yield Mutation(bundle, f"{name}.line", f"{name} line {index + 1}", apply)


def sample(mutations: list[Mutation], every: int) -> list[Mutation]:
    """A sample that still covers every field kind: each kind once, in a bundle chosen by a
    stable hash of the kind among the bundles that have it, plus every *every*-th case."""
    by_kind: dict[str, list[Mutation]] = {}
    for mutation in mutations:
        by_kind.setdefault(mutation.kind, []).append(mutation)
    picked = {
        group[_stable(kind) % len(group)].id: group[_stable(kind) % len(group)]
        for kind, group in by_kind.items()
    }
    for mutation in mutations:
        if _stable(mutation.id) % every == 0:
            picked[mutation.id] = mutation
    return [m for m in mutations if m.id in picked]


def _stable(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
