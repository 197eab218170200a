"""The manifest of a new bundle: task T, initial state s0 (seeds) and configuration c."""

from __future__ import annotations

import secrets as _secrets
from collections.abc import Sequence
from typing import Any

from symtrace.bundle.format import KIND_SELECTIVE
from symtrace.bundle.reader import Bundle
from symtrace.model.canonical import RULE_IDS, JSONValue, to_json_value
from symtrace.model.runtime_info import runtime_config
from symtrace.model.seeded_ids import CURRENT as CURRENT_ID_SCHEME
from symtrace.model.seeded_ids import FIELD as ID_SCHEME_FIELD
from symtrace.model.seeded_ids import scheme_of


def new_manifest(
    *,
    kind: str,
    task: JSONValue,
    state: JSONValue,
    config: JSONValue,
    seed: int,
    hash_seed: str | None,
    adapters: Sequence[str],
    command: dict[str, Any] | None = None,
    lineage: dict[str, Any] | None = None,
    id_scheme: str = CURRENT_ID_SCHEME,
) -> dict[str, Any]:
    """*id_scheme*: how the run derives the ids a framework draws at random
    (model/seeded_ids.py); a new recording's is the current one."""
    return {
        "kind": kind,
        "task": to_json_value(task),
        "initial_state": {
            "random_seed": seed,
            "hash_seed": hash_seed,
            "user": to_json_value(state),
            ID_SCHEME_FIELD: id_scheme,
        },
        "config": {
            **runtime_config(),
            "adapters": sorted(adapters),
            "normalisation": list(RULE_IDS),
            "command": command,
            "user": to_json_value(config),
        },
        "lineage": lineage,
        "replayable": True,
    }


def new_seed() -> int:
    return _secrets.randbits(32)


def child_manifest(bundle: Bundle, adapters: Sequence[str]) -> dict[str, Any]:
    """A child bundle inherits T, s0 and c from its parent, and its seeded-id scheme (the
    replay that writes it draws ids as the parent's recording did)."""
    manifest = new_manifest(
        kind=KIND_SELECTIVE,
        task=bundle.task,
        state=bundle.initial_state.get("user"),
        config=bundle.config.get("user"),
        seed=bundle.initial_state.get("random_seed", 0),
        hash_seed=bundle.initial_state.get("hash_seed"),
        adapters=adapters,
        command=bundle.config.get("command"),
        id_scheme=scheme_of(bundle.initial_state),
    )
    return manifest
