"""Generated AG2 1.x programs (module `ag2`) pass the differential replay check: strict
replays identical with no request and no tool body run, a changed prompt diverging at that
agent's first request, a selective replay at every agent request going live (or refused,
typed, before any live call) with a child that replays strictly."""

from __future__ import annotations

import pytest
from gen_harness import check_topology
from gen_spec import TOPOLOGIES

FRAMEWORK = "ag2v1"


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES[FRAMEWORK]))
def test_generated_programs_replay(topology: str, stochastic_stub, tmp_path, monkeypatch
                                   ) -> None:
    import gen_ag2v1

    monkeypatch.chdir(tmp_path)
    check_topology(FRAMEWORK, topology, gen_ag2v1.run, gen_ag2v1.ADAPTER, stochastic_stub)
