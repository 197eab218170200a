"""Seeded framework ids (symtrace/model/seeded_ids.py): per causal sequence, versioned per bundle.

A bundle records the scheme its ids were derived with; replay derives them the same way, old
bundles (no field) with the global-random draws they were recorded with, and a bundle naming
a scheme this symtrace does not know is refused before anything runs.
"""

from __future__ import annotations

import asyncio
import random
import uuid
from contextvars import ContextVar

import orjson
import pytest

import symtrace
from symtrace.bundle import load_bundle
from symtrace.bundle.manifest import child_manifest, new_manifest
from symtrace.errors import EXIT_BUNDLE, BundleFormatError
from symtrace.frameworks.contract import seeded_uuid4
from symtrace.model import seeded_ids
from symtrace.model.seeded_ids import SeededIds, UnsupportedIdScheme, scheme_of

from ..integrity.test_crafted_bundles import reseal

STATE = {"random_seed": 7, seeded_ids.FIELD: seeded_ids.PER_SEQUENCE}


def test_ids_of_a_sequence_do_not_depend_on_how_sequences_interleave():
    first, second = SeededIds(STATE), SeededIds(STATE)
    a1, b1, a2 = first.uuid4("a"), first.uuid4("b"), first.uuid4("a")
    b2, a3, a4 = second.uuid4("b"), second.uuid4("a"), second.uuid4("a")
    assert (a1, a2) == (a3, a4) and b1 == b2
    assert len({a1, a2, b1}) == 3 and a1.version == 4
    assert SeededIds({**STATE, "random_seed": 8}).uuid4("a") != a1  # s0 is part of them


def test_the_per_sequence_scheme_leaves_pythons_random_stream_alone():
    random.seed(3)
    expected = random.random()
    random.seed(3)
    SeededIds(STATE).uuid4()
    assert random.random() == expected


def test_a_bundle_without_the_field_replays_its_global_random_draws():
    assert scheme_of({"random_seed": 1}) == seeded_ids.GLOBAL_RANDOM
    random.seed(5)
    expected = uuid.UUID(int=random.getrandbits(128), version=4)
    random.seed(5)
    assert SeededIds({"random_seed": 5}).uuid4("any") == expected


def test_an_unknown_scheme_is_a_typed_bundle_error_naming_it():
    with pytest.raises(UnsupportedIdScheme, match="per-sequence/9") as caught:
        scheme_of({seeded_ids.FIELD: "per-sequence/9"})
    assert isinstance(caught.value, BundleFormatError)
    assert caught.value.exit_code == EXIT_BUNDLE and caught.value.found == "per-sequence/9"


def test_a_new_manifest_records_the_current_scheme_and_a_child_its_parents(tmp_path):
    manifest = new_manifest(kind="recording", task="t", state=None, config=None, seed=1,
                            hash_seed=None, adapters=[])
    assert manifest["initial_state"][seeded_ids.FIELD] == seeded_ids.CURRENT
    old = _record(tmp_path / "old", ["a", "b", "a", "b"])
    _set_scheme(old, None)  # recorded before the field existed
    assert child_manifest(load_bundle(old), [])["initial_state"][seeded_ids.FIELD] == \
        seeded_ids.GLOBAL_RANDOM


# -- through the adapter contract: a recording, and its replay in another interleaving -------
_sequence: ContextVar[str] = ContextVar("test_sequence", default="main")
framework_uuid4 = seeded_uuid4(uuid.uuid4, _sequence.get)


def _program(order: list[str]) -> dict[str, list[str]]:
    """Two concurrent 'chats' each draw two ids; *order*: which one draws first each round."""
    drawn: dict[str, list[str]] = {"a": [], "b": []}

    async def chat(name: str, go: asyncio.Event, done: asyncio.Event) -> None:
        _sequence.set(f"chat#{name}")
        for _ in range(2):
            await go.wait()
            go.clear()
            drawn[name].append(str(framework_uuid4()))
            done.set()

    async def main() -> None:
        events = {name: (asyncio.Event(), asyncio.Event()) for name in "ab"}
        tasks = [asyncio.create_task(chat(n, *events[n])) for n in "ab"]
        for name in order:
            go, done = events[name]
            go.set()
            await done.wait()
            done.clear()
        await asyncio.gather(*tasks)

    asyncio.run(main())
    return drawn


def _record(path, order: list[str]) -> object:
    with symtrace.record(path, task="ids", seed=11, adapters=[]):
        _record.drawn = _program(order)  # type: ignore[attr-defined]
    return path


def _set_scheme(bundle, scheme: str | None) -> None:
    manifest = orjson.loads((bundle / "manifest.json").read_bytes())
    if scheme is None:
        manifest["initial_state"].pop(seeded_ids.FIELD)
    else:
        manifest["initial_state"][seeded_ids.FIELD] = scheme
    reseal(bundle, manifest)


def test_replay_gives_each_sequence_its_recorded_ids_in_another_interleaving(tmp_path):
    bundle = _record(tmp_path / "b", ["a", "b", "a", "b"])
    recorded = _record.drawn  # type: ignore[attr-defined]
    assert load_bundle(bundle).initial_state[seeded_ids.FIELD] == seeded_ids.PER_SEQUENCE
    with symtrace.replay(bundle, adapters=[]):
        replayed = _program(["b", "b", "a", "a"])
    assert replayed == recorded
    assert str(uuid.uuid4()) not in recorded["a"]  # outside a session: the framework's own


def test_an_old_bundle_replays_with_the_ids_it_was_recorded_with(tmp_path):
    """A bundle without the field drew from the s0-seeded `random` in call order: replay
    derives its ids that way (in the recorded order), not with today's scheme."""
    bundle = tmp_path / "b"
    with symtrace.record(bundle, task="ids", seed=11, adapters=[]):
        ids = [str(framework_uuid4()) for _ in range(3)]
    _set_scheme(bundle, None)
    random.seed(11)
    legacy = [str(uuid.UUID(int=random.getrandbits(128), version=4)) for _ in range(3)]
    with symtrace.replay(bundle, adapters=[]):
        assert [str(framework_uuid4()) for _ in range(3)] == legacy
    assert ids != legacy  # recorded today: the per-sequence scheme


def test_replay_of_a_bundle_with_an_unknown_scheme_is_refused_before_it_runs(tmp_path):
    bundle = _record(tmp_path / "b", ["a", "b", "a", "b"])
    _set_scheme(bundle, "per-sequence/9")
    ran = []
    with pytest.raises(UnsupportedIdScheme, match="'per-sequence/9'"), \
            symtrace.replay(bundle, adapters=[]):
        ran.append(True)
    assert not ran
