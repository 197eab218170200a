"""Generated AgentChat / Magentic-One programs pass the differential replay check."""

from __future__ import annotations

import pytest
from gen_harness import needs

needs("autogen_agentchat")
needs("autogen_ext.models.openai")

from gen_harness import check_topology  # noqa: E402
from gen_spec import TOPOLOGIES  # noqa: E402

FRAMEWORK = "autogen_agentchat"
pytestmark = [
    pytest.mark.framework(FRAMEWORK),
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings"),
]


# graph_fanout: the child of a selective replay diverged once in the clean-clone CI run (the two
# reviewers' messages reached the critic in the other order). Open, reported on issue 19; kept
# running (non-strict) so it is seen, not hidden.
FANOUT_OPEN = pytest.mark.xfail(strict=False, reason="open issue-19 finding: fan-out order in the "
                                "child of a selective replay under load")


@pytest.mark.parametrize("topology", [
    pytest.param(t, marks=FANOUT_OPEN) if t == "graph_fanout" else t
    for t in sorted(TOPOLOGIES[FRAMEWORK])])
def test_generated_programs_replay(topology: str, stochastic_stub) -> None:
    import gen_agentchat

    check_topology(FRAMEWORK, topology, gen_agentchat.run, gen_agentchat.ADAPTER, stochastic_stub)
