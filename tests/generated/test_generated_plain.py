"""Generated plain programs (the openai SDK under `symtrace.agent` blocks, concurrent turns of
one agent under `asyncio.gather` and in threads) pass the differential replay check."""

from __future__ import annotations

import pytest
from gen_harness import check_topology, topology_params

FRAMEWORK = "plain"
pytestmark = [pytest.mark.slow]


@pytest.mark.parametrize("topology", topology_params(FRAMEWORK))
def test_generated_programs_replay(topology: str, stochastic_stub) -> None:
    import gen_plain

    check_topology(FRAMEWORK, topology, gen_plain.run, gen_plain.ADAPTER, stochastic_stub)
