"""The types of a bundle's fields, checked when it is read (docs/bundle-format.md).

A bundle is data from someone else: a `config.command.argv` that is a string would be run
character by character, a `position` of "3" read as 3, a `meta` nested 10,000 deep crash the
first serialiser that meets it. Every field a reader uses is checked for its JSON type here,
once, and a wrong one is a BundleFormatError naming the field (exit 91), never a traceback or
a silently different reading.
"""

from __future__ import annotations

from itertools import product, repeat
from operator import itemgetter
from typing import Any

from symtrace.errors import BundleFormatError

_NONE = type(None)
# Manifest fields by dotted path -> the JSON types allowed (absent is allowed unless
# format.REQUIRED_MANIFEST_FIELDS requires it; a parent that is absent or null skips its
# children). `task` is any JSON value.
MANIFEST_TYPES: dict[str, tuple[type, ...]] = {
    "format_version": (int,),
    "kind": (str,),
    "complete": (bool,),
    "replayable": (bool,),
    "graph": (str, _NONE),
    "initial_state": (dict,),
    "config": (dict,),
    "config.adapters": (list,),
    "config.normalisation": (list,),
    "config.versions": (dict,),
    "config.command": (dict, _NONE),
    "config.command.argv": (list,),
    "config.command.cwd": (str, _NONE),
    "config.command.env": (dict,),
    "outcome": (dict, _NONE),
    "outcome.status": (str, _NONE),
    "outcome.exit_code": (int, _NONE),
    "lineage": (dict, _NONE),
    "lineage.parent": (str, _NONE),
    "lineage.parent_digest": (str, _NONE),
    "lineage.anchor": (str, _NONE),
    "lineage.anchor_note": (str, _NONE),
    "lineage.intervention": (dict, _NONE),
    "lineage.intervention.event_id": (str, _NONE),
    "lineage.intervention.guidance": (str, _NONE),
    "lineage.replayed_events": (list,),
    "lineage.live_events": (list,),
    "lineage.superseded_events": (list,),
    "lineage.not_reached_events": (list,),
    "lineage.live_reasons": (dict,),
    "counts": (dict, _NONE),
    "events_digest": (str, _NONE),
}
# Lists whose items must all be strings, and objects whose values must all be strings.
STRING_LISTS = ("config.adapters", "config.normalisation", "config.command.argv",
                "lineage.replayed_events", "lineage.live_events", "lineage.superseded_events",
                "lineage.not_reached_events")
STRING_MAPS = ("config.command.env",)


def check_manifest_types(manifest: dict[str, Any], where: str) -> None:
    """Raise BundleFormatError naming the first manifest field of the wrong type."""
    for path, allowed in MANIFEST_TYPES.items():
        found, value = _lookup(manifest, path)
        if found and (type(value) not in allowed):
            raise BundleFormatError(
                f"{where}: {path} is {_json_type(value)}, expected "
                f"{' or '.join(_json_name(t) for t in allowed)}")
    for path in STRING_LISTS:
        found, value = _lookup(manifest, path)
        if found and not all(type(item) is str for item in value):
            raise BundleFormatError(f"{where}: {path} must hold strings only")
    for path in STRING_MAPS:
        found, value = _lookup(manifest, path)
        if found and not all(type(item) is str for item in value.values()):
            raise BundleFormatError(f"{where}: {path} must map names to strings")


def _lookup(manifest: dict[str, Any], path: str) -> tuple[bool, Any]:
    value: Any = manifest
    for part in path.split("."):
        if type(value) is not dict or part not in value:
            return False, None
        value = value[part]
    return True, value


_OPTIONAL_STR = (str, _NONE)
# Event line fields -> allowed types (parents: checked apart; request/response: any JSON).
EVENT_TYPES: tuple[tuple[str, tuple[type, ...]], ...] = (
    ("id", (str,)),
    ("type", (str,)),
    ("lane", (str,)),
    ("position", (int,)),
    ("agent", _OPTIONAL_STR),
    ("reason", _OPTIONAL_STR),
    ("request_hash", _OPTIONAL_STR),
    ("response_hash", _OPTIONAL_STR),
    ("content_hash", (str,)),
    ("meta", (dict, _NONE)),
)


def check_event_record(record: Any, line: int) -> None:
    """Raise BundleFormatError unless *record* (the parsed event line *line*, from 1) has the
    field types the format gives it (absent optional fields are left to the event's reading).

    Every load checks every line, so the common case (a line with every field, as the
    writer writes it) is C-level: the fields' types as one tuple, looked up in the set of
    allowed ones; the edges' types by maps. The rest only runs to name what is wrong."""
    if type(record) is dict:
        try:
            kinds = tuple(map(type, _FIELDS_OF(record)))
        except KeyError:  # a field absent: the named checks below
            kinds = ()
        parents = record.get("parents", ())
        if kinds in _ALLOWED and type(parents) is list and (
                not parents or (_DICT.issuperset(map(type, parents)) and _STRINGS.issuperset(
                    map(type, map(_edge_field, parents, repeat("source")))) and
                    _STRINGS.issuperset(map(type, map(_edge_field, parents, repeat("kind")))))):
            return
    where = f"events.jsonl line {line}"
    if type(record) is not dict:
        raise BundleFormatError(f"{where}: an event line must be a JSON object")
    for name, allowed in EVENT_TYPES:
        if name in record and type(record[name]) not in allowed:
            raise BundleFormatError(
                f"{where}: {name} is {_json_type(record[name])}, expected "
                f"{' or '.join(_json_name(t) for t in allowed)}")
    if kinds or type(record.get("parents", ())) is not list or any(
            type(edge) is not dict or type(edge.get("source")) is not str
            or type(edge.get("kind")) is not str for edge in record.get("parents", ())):
        raise BundleFormatError(f"{where}: parents must be an array of {{source, kind}} "
                                "strings")


_FIELDS_OF = itemgetter(*(name for name, _ in EVENT_TYPES))
# every combination of allowed types, in EVENT_TYPES order
_ALLOWED = frozenset(product(*(allowed for _, allowed in EVENT_TYPES)))
_STRINGS = frozenset((str,))
_DICT = frozenset((dict,))


def _edge_field(edge: dict[str, Any], name: str) -> Any:
    return edge.get(name)


def _json_type(value: Any) -> str:
    return _json_name(type(value))


def _json_name(kind: type) -> str:
    return {dict: "an object", list: "an array", str: "a string", int: "an integer",
            float: "a number", bool: "a boolean", _NONE: "null"}.get(kind, kind.__name__)
