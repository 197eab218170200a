"""A bundle of 200+ events recorded through the public API against the embedded stub."""

from __future__ import annotations

from pathlib import Path

import pytest

import symtrace
from symtrace.bundle import Bundle, load_bundle

XSS = ("</script><script>document.title='pwned'</script>"
       "<img src=x onerror=\"document.title='pwned'\">")
AGENTS = ("planner", "researcher", "writer")


@symtrace.tool
def lookup(topic: str) -> str:
    if topic == "atlantis":
        raise LookupError("no such place: atlantis")
    return XSS if topic == "xss" else f"facts about {topic}"


def record_big(path: Path, url: str) -> None:
    import openai

    client = openai.OpenAI(base_url=url, api_key="sk-test", max_retries=0)
    with symtrace.record(path, task="scale test: three agents, many tool calls") as rec:
        for turn in range(12):
            agent = AGENTS[turn % 3]
            with symtrace.agent(agent):
                note = XSS if turn == 4 else ""
                client.chat.completions.create(
                    model="stub-model",
                    messages=[{"role": "user", "content": f"turn {turn} {note}"}],
                )
                for step in range(8):
                    topic = "xss" if (turn, step) == (2, 3) else f"{agent}-{step % 4}"
                    try:
                        lookup("atlantis" if (turn, step) == (5, 1) else topic)
                    except LookupError:
                        pass
        rec.final_result("done")


@pytest.fixture(scope="session")
def big_bundle(tmp_path_factory: pytest.TempPathFactory) -> Bundle:
    from symtrace.stub import StubLLM

    path = tmp_path_factory.mktemp("viewer") / "big"
    script = {"rules": [], "default": {"content": "Noted; continuing with the lookups."}}
    with StubLLM(mode="scripted", script=script) as stub:
        record_big(path, stub.url)
    bundle = load_bundle(path)
    assert len(bundle.events) >= 200
    return bundle
