"""Naming the first field of a sealed bundle that no longer matches its seal.

Called when the root digest does not hold. Checks run in a fixed order and the first
disagreement is named (`sums.jsonl line 4`, `manifest.task`, `events[12].agent`,
`blobs.jsonl line 7`, `stdout.txt line 3`, `manifest.digest.root`). A file whose bytes still
match the sealed digest is trusted and used to judge the others, so a single change is named
where it was made, including a change to the locator (sums.jsonl) or to the seal itself.
"""

from __future__ import annotations

from typing import Any

import orjson

from symtrace.bundle import blobs
from symtrace.bundle.format import DIGEST, EVENTS, PACK, SEALED_FILES, STDOUT, SUMS
from symtrace.bundle.pack import scan
from symtrace.bundle.seal import (
    EVENT_FIELDS,
    canon,
    event_sums,
    manifest_sums,
    root_digest,
    sha256_ref,
    short_sum,
    stdout_lines,
    trailer,
    unsealed,
)
from symtrace.errors import BundleFormatError, BundleIntegrityError


class Found(Exception):
    def __init__(self, where: str, what: str) -> None:
        self.where = where
        self.what = what


def locate(manifest: dict[str, Any], files: dict[str, bytes | None]) -> BundleIntegrityError:
    """The BundleIntegrityError naming where a sealed bundle differs from its seal."""
    try:
        _locate(manifest, files)
    except Found as found:
        return BundleIntegrityError(found.what, where=found.where)
    return BundleIntegrityError(
        "the bundle does not match its root digest", where="manifest.digest"
    )


def _locate(manifest: dict[str, Any], files: dict[str, bytes | None]) -> None:
    seal = manifest[DIGEST]
    if not isinstance(seal, dict) or set(seal) != {"files", "root"}:
        raise Found("manifest.digest", "the seal is not {files, root}")
    stored = seal["files"]
    if not isinstance(stored, dict):
        raise Found("manifest.digest.files", "not an object")
    actual = {name: sha256_ref(data) for name, data in files.items() if data is not None}
    for name in SEALED_FILES:
        if name in stored and name not in actual:
            raise Found(name, "the file is missing")
        if name in actual and name not in stored:
            raise Found(name, "the file is not covered by the seal (added after sealing)")
    changed = {name for name in actual if actual[name] != stored.get(name)}
    events = _lines(files[EVENTS] or b"")
    sums_lines = _lines(files[SUMS] or b"")
    if SUMS in changed and EVENTS not in changed:
        _locate_in_sums(manifest, files, events, sums_lines)
    *event_sum_lines, tail = sums_lines or [b"{}"]
    try:
        sealed_trailer = orjson.loads(tail)
    except orjson.JSONDecodeError:
        raise Found(f"{SUMS} line {len(sums_lines)}", "not valid JSON") from None
    _locate_in_manifest(manifest, sealed_trailer.get("manifest") or {})
    if EVENTS in changed:
        _locate_in_events(events, event_sum_lines)
        raise Found(f"manifest.digest.files.{EVENTS}", "does not match the (intact) events")
    if PACK in changed:
        _locate_in_pack(files[PACK] or b"", events)
        raise Found(f"manifest.digest.files.{PACK}", "does not match the (intact) blobs")
    if STDOUT in changed:
        _locate_in_stdout(files[STDOUT] or b"", sealed_trailer.get("stdout") or [])
        raise Found(f"manifest.digest.files.{STDOUT}", "does not match the (intact) stdout")
    if SUMS in changed:
        raise Found(f"manifest.digest.files.{SUMS}", "does not match the (intact) sums")
    if seal["root"] != root_digest(manifest, stored):
        raise Found("manifest.digest.root", "does not match the manifest and files it covers")


def _lines(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def _locate_in_sums(
    manifest: dict[str, Any],
    files: dict[str, bytes | None],
    events: list[bytes],
    sums_lines: list[bytes],
) -> None:
    """The events are intact: recompute their sums and the trailer, name the first difference."""
    expected = [canon(event_sums(orjson.loads(line))) for line in events]
    expected.append(canon(trailer(manifest, files[STDOUT])))
    for number, (have, want) in enumerate(zip(sums_lines, expected, strict=False), start=1):
        if have != want:
            raise Found(f"{SUMS} line {number}", "does not match the event or manifest it sums")
    if len(sums_lines) != len(expected):
        raise Found(f"{SUMS} line {min(len(sums_lines), len(expected)) + 1}", "added or removed")


def _locate_in_manifest(manifest: dict[str, Any], sealed: dict[str, str]) -> None:
    now = manifest_sums(unsealed(manifest))
    for path in sorted(set(now) | set(sealed)):
        if path not in sealed:
            raise Found(f"manifest.{path}", "field added after sealing")
        if path not in now:
            raise Found(f"manifest.{path}", "field removed after sealing")
        if now[path] != sealed[path]:
            raise Found(f"manifest.{path}", "does not match the sealed value")


def _locate_in_events(events: list[bytes], sums_lines: list[bytes]) -> None:
    for index, line in enumerate(events):
        where = f"events[{index}]"
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise Found(where, f"{EVENTS} line {index + 1} is not valid JSON") from None
        if not isinstance(record, dict):
            raise Found(where, "not a JSON object")
        if index >= len(sums_lines):
            raise Found(where, "event added after sealing")
        sealed = orjson.loads(sums_lines[index])
        for key in sorted(record):
            if key not in EVENT_FIELDS:
                raise Found(f"{where}.{key}", "field added after sealing")
        for key, want in zip(EVENT_FIELDS, sealed, strict=False):
            have = short_sum(canon(record[key])) if key in record else "-"
            if have != want:
                raise Found(f"{where}.{key}", f"does not match the sealed value ({_id(record)})")
        if canon(record) != line:
            raise Found(where, f"{EVENTS} line {index + 1} is not canonical JSON")
    if len(events) < len(sums_lines):
        raise Found(f"events[{len(events)}]", "event removed after sealing")


def _id(record: dict[str, Any]) -> str:
    return str(record.get("id"))


def _locate_in_pack(data: bytes, events: list[bytes]) -> None:
    try:
        index = scan(data)
    except BundleFormatError as exc:
        raise Found(str(exc).split(":", 1)[0], "not `<sha256 ref> <json>`") from None
    lines = _lines(data)
    for number, line in enumerate(lines, start=1):
        ref, _, body = line.partition(b" ")
        if sha256_ref(body).encode() != ref:
            name = ref.decode(errors="replace")
            raise Found(f"{PACK} line {number}", f"blob {name} does not match its content")
    if len(index) != len(lines):
        raise Found(f"{PACK}", "a blob is stored twice")
    referenced = _referenced(events, index, data)
    for number, ref in sorted((span[0], ref) for ref, span in index.items()):
        if ref not in referenced:
            raise Found(f"{PACK} line {number}", f"blob {ref} is not used by any event")


def _referenced(
    events: list[bytes], index: dict[str, tuple[int, int, int]], data: bytes
) -> set[str]:
    seen: set[str] = set()
    todo: list[tuple[str, str]] = []
    for number, line in enumerate(events):
        record = orjson.loads(line)
        for field in ("request", "response"):
            user = f"events[{number}].{field}"
            todo.extend((ref, user) for ref in blobs.refs_in(record.get(field)))
    while todo:
        ref, user = todo.pop()
        if ref in seen:
            continue
        span = index.get(ref)
        if span is None:
            raise Found(user, f"names blob {ref}, which is missing from {PACK}")
        seen.add(ref)
        value = orjson.loads(data[span[1] : span[2]])
        if isinstance(value, dict) and "$i" in value:
            if isinstance(value.get("$p"), str):
                todo.append((value["$p"], user))
            value = value["$i"]
        todo.extend((inner, user) for inner in blobs.refs_in(value))
    return seen


def _locate_in_stdout(data: bytes, sealed: list[str]) -> None:
    lines = stdout_lines(data)
    for number, (line, want) in enumerate(zip(lines, sealed, strict=False), start=1):
        if short_sum(line) != want:
            raise Found(f"{STDOUT} line {number}", "does not match the recorded output")
    if len(lines) != len(sealed):
        raise Found(f"{STDOUT} line {min(len(lines), len(sealed)) + 1}", "line added or removed")
