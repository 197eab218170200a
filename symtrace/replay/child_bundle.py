"""The replayed run's own trajectory: the child bundle a selective replay writes, its lineage.

Every record a replay serves becomes an event of the new run again ("materialised"): its
content re-checked against the recorded digest, then renumbered in the replayed order and
written through the session (to the child bundle, when there is one). Live events are the
session's own. The lineage says where the child came from: parent, anchor, intervention,
and which events were replayed, run live, superseded, or never reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from symtrace.bundle.reader import Bundle
from symtrace.errors import BundleIntegrityError
from symtrace.model.events import Event
from symtrace.model.hashing import digest
from symtrace.model.intervention import Intervention
from symtrace.session.core import Session


class ChildTrajectory:
    """Which events of the new run were replayed and which ran live (ids, in order)."""

    def __init__(self, session: Session) -> None:
        self._session = session
        self.replayed_ids: list[str] = []
        self.live_ids: list[str] = []
        self._live: set[str] = set()
        self.anchor_live_id: str | None = None

    def materialise(self, record: Event) -> None:
        """Re-check the served content against its recorded digest; adopt it into the run."""
        if record.response is not None and digest(record.response) != record.response_hash:
            raise BundleIntegrityError(
                f"{record.id}: served content does not match its recorded digest"
            )
        self._session.adopt(record)
        self.replayed_ids.append(record.id)

    def ran_live(self, event_id: str) -> None:
        if event_id not in self._live:
            self._live.add(event_id)
            self.live_ids.append(event_id)


def lineage(
    bundle: Bundle,
    parent_path: str,
    anchor: str | None,
    intervention: Intervention,
    trajectory: ChildTrajectory,
    superseded: set[str],
    not_reached: Sequence[Event],
    live_reasons: dict[str, str],
) -> dict[str, Any]:
    """What a child bundle's manifest says about where it came from."""
    return {
        "parent": parent_path,
        "parent_digest": bundle.digest,
        "anchor": anchor,
        "intervention": {
            "event_id": trajectory.anchor_live_id,
            "guidance": intervention.guidance,
            "placement": intervention.placement,
        },
        "replayed_events": list(trajectory.replayed_ids),
        "live_events": list(trajectory.live_ids),
        "superseded_events": sorted(superseded),
        # why each live event went live: the anchor, a live lane or chooser, a live value read
        "live_reasons": dict(live_reasons),
        "not_reached_events": [r.id for r in not_reached],
    }
