"""Generated CrewAI programs pass the differential replay check."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from gen_harness import needs

needs("crewai")

from gen_harness import check_topology  # noqa: E402
from gen_react import ReActStochastic  # noqa: E402
from gen_spec import TOPOLOGIES  # noqa: E402

from tests._support import inside_home  # noqa: E402

FRAMEWORK = "crewai"
pytestmark = [pytest.mark.framework(FRAMEWORK), pytest.mark.slow]


@pytest.fixture(scope="module")
def stochastic_stub(gen_home: dict[str, str]) -> Iterator[Any]:
    """The unseeded stochastic stub, answering CrewAI's ReAct prompts in ReAct format."""
    from symtrace.stub import StubLLM

    with inside_home(gen_home), StubLLM(responder=ReActStochastic()) as stub:
        yield stub


@pytest.mark.parametrize("topology", sorted(TOPOLOGIES[FRAMEWORK]))
def test_generated_programs_replay(topology: str, stochastic_stub) -> None:
    import gen_crewai

    check_topology(FRAMEWORK, topology, gen_crewai.run, gen_crewai.ADAPTER, stochastic_stub)
