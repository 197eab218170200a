"""Generated AgentChat / Magentic-One programs pass the differential replay check."""

from __future__ import annotations

import pytest
from gen_harness import needs

needs("autogen_agentchat")
needs("autogen_ext.models.openai")

from gen_harness import check_topology, topology_params  # noqa: E402

FRAMEWORK = "autogen_agentchat"
pytestmark = [
    pytest.mark.framework(FRAMEWORK),
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


# graph_fanout (two reviewers finishing in either order) was a non-strict xfail: under load the
# child of a selective replay, or a strict replay, diverged when one reviewer's result was
# handed out while the other was still using its own. Every session now hands results out one
# receiver at a time (symtrace/session/scheduling.py); tests/unit/test_order_without_timing.py is
# the deterministic regression test.
@pytest.mark.parametrize("topology", topology_params(FRAMEWORK))
def test_generated_programs_replay(topology: str, stochastic_stub) -> None:
    import gen_agentchat

    check_topology(FRAMEWORK, topology, gen_agentchat.run, gen_agentchat.ADAPTER, stochastic_stub)
