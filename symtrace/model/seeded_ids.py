"""Identifiers a framework draws at random (AG2's event uuids), made a function of the bundle.

A framework that names things with `uuid4()` prints different transcripts on two runs with
identical boundaries; while a session is active such ids are *seeded* instead
(`symtrace.frameworks.contract.seeded_uuid4`). How they are derived is a **scheme**, and the
bundle records which one its recording used (manifest `initial_state.seeded_ids`), so a later
symtrace that changes the derivation still replays every old bundle with the ids it printed:

* `global-random/1` (bundles without the field): drawn from Python's `random`, seeded from s0,
  in global call order. Concurrent chats interleave their draws as the scheduler ran them, so
  replay handed a chat the id another chat got while recording.
* `per-sequence/2` (new recordings): the n-th id of a *causal sequence* (an adapter names it:
  classic AG2's concurrent chat, else `main`) is a hash of (s0, sequence, n): each chat gets its
  own ids whatever the interleaving, and nothing is taken from Python's `random` stream.

A bundle naming a scheme this symtrace does not know is refused before replay starts
(`UnsupportedIdScheme`, exit 91), never replayed with other ids.
"""

from __future__ import annotations

import hashlib
import random
import threading
import uuid
from collections.abc import Mapping
from typing import Any

from symtrace.errors import BundleFormatError

FIELD = "seeded_ids"  # the manifest's initial_state key naming the scheme
GLOBAL_RANDOM = "global-random/1"
PER_SEQUENCE = "per-sequence/2"
CURRENT = PER_SEQUENCE  # what a new recording uses
LEGACY = GLOBAL_RANDOM  # what a bundle without the field used
SCHEMES = (GLOBAL_RANDOM, PER_SEQUENCE)
MAIN_SEQUENCE = "main"


class UnsupportedIdScheme(BundleFormatError):
    """The bundle's seeded-id scheme is not one this symtrace derives."""

    def __init__(self, found: object) -> None:
        self.found = found
        super().__init__(
            f"bundle initial_state.{FIELD} {found!r} is not a seeded-id scheme this symtrace "
            f"knows ({', '.join(SCHEMES)}): replaying it would print other ids than the "
            "recording did; replay it with the symtrace that recorded it, or re-record")


def scheme_of(initial_state: Mapping[str, Any]) -> str:
    """The seeded-id scheme a bundle's recording used (raises `UnsupportedIdScheme`)."""
    scheme = initial_state.get(FIELD, LEGACY)
    if scheme not in SCHEMES:
        raise UnsupportedIdScheme(scheme)
    return str(scheme)


def derived_uuid(seed: object, sequence: str, ordinal: int) -> uuid.UUID:
    """`per-sequence/2`: the *ordinal*-th id of *sequence* in a run seeded with *seed*."""
    digest = hashlib.sha256(f"{seed}\x00{sequence}\x00{ordinal}".encode()).digest()
    return uuid.UUID(bytes=digest[:16], version=4)


class SeededIds:
    """One session's seeded ids: its scheme, its seed and how many ids each sequence drew."""

    def __init__(self, initial_state: Mapping[str, Any]) -> None:
        self.scheme = scheme_of(initial_state)
        self.seed = initial_state.get("random_seed")
        self._drawn: dict[str, int] = {}
        self._lock = threading.Lock()

    def uuid4(self, sequence: str = MAIN_SEQUENCE) -> uuid.UUID:
        if self.scheme == GLOBAL_RANDOM:
            return uuid.UUID(int=random.getrandbits(128), version=4)
        with self._lock:
            ordinal = self._drawn.get(sequence, 0)
            self._drawn[sequence] = ordinal + 1
        return derived_uuid(self.seed, sequence, ordinal)
