"""Lane identity of framework objects: one lane per instance, stable across runs.

A lane is a sequential actor. Naming it after an agent breaks when two agent *instances*
share a name (two teams that each have a "writer", one CrewAI agent running two async tasks
at once): their calls would interleave on one strict lane and replay would report a spurious
reorder. `instance_lane(obj, name)` (in `symtrace.session.core`, next to the active session whose
registry this is) gives each instance its own lane:

* the first instance seen with *name* in a session gets lane `name` (so single-instance
  programs, and bundles recorded before this existed, keep their lanes);
* the n-th distinct instance gets `name@n` (n = 2, 3, ...).

"Seen" means registered: an adapter calls `instance_lane` where the framework creates the
object (its constructor) when it can, else at the object's first turn. Creation order is a
property of the program, not of timing, so the same instance gets the same lane in every
record and replay of the run.

Instances are held (strong references) for the session's lifetime, so an `id()` is never
reused for another object while it keys a lane.
"""

from __future__ import annotations

import threading


class LaneIdentities:
    """Per-session registry: (object, base name) -> lane."""

    def __init__(self) -> None:
        self._lanes: dict[tuple[int, str], str] = {}
        self._counts: dict[str, int] = {}
        self._held: list[object] = []
        self._lock = threading.Lock()

    def lane_for(self, obj: object, name: str) -> str:
        with self._lock:
            key = (id(obj), name)
            lane = self._lanes.get(key)
            if lane is None:
                count = self._counts.get(name, 0) + 1
                self._counts[name] = count
                lane = name if count == 1 else f"{name}@{count}"
                self._lanes[key] = lane
                self._held.append(obj)
            return lane

