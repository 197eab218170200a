"""Generated classic-AG2 programs (module `autogen`) pass the differential replay check."""

from __future__ import annotations

import pytest
from gen_harness import needs

needs("autogen")

from gen_harness import check_topology, topology_params  # noqa: E402

FRAMEWORK = "ag2"
pytestmark = [pytest.mark.framework(FRAMEWORK), pytest.mark.slow]


@pytest.mark.parametrize("topology", topology_params(FRAMEWORK))
def test_generated_programs_replay(topology: str, stochastic_stub, tmp_path, monkeypatch
                                   ) -> None:
    import gen_ag2

    monkeypatch.chdir(tmp_path)  # AG2's legacy disk cache would write ./.cache
    check_topology(FRAMEWORK, topology, gen_ag2.run, gen_ag2.ADAPTER, stochastic_stub)
