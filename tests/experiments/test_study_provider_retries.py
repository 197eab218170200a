"""Provider faults under the study, per framework: the SDK inside each MAS (AG2's OpenAI
client, CrewAI's LLM, AgentChat's OpenAIChatCompletionClient) retries a 429/503 itself, the
attempt's row counts the refused tries as `llm.provider_errors` (never as calls, never as a
failure), and a selective replay's guided anchor carries Δ on the refused try and on the retry
that succeeds (issue 39).

The stub refuses the first try of every distinct request (`faults_every: 1`), so the node
arm's anchor request is refused once for sure. One failing task per framework (skill 0.6,
seed 0, as `make study-stub`).
"""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from symtrace_study.config import parse_config
from symtrace_study.llm_usage import status_of
from symtrace_study.reproduction import live_events
from symtrace_study.study import Study

import symtrace

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1200)]  # cold frameworks on loaded runners
FAILING = {"ag2": "shop-002", "crewai": "shop-001", "magentic": "shop-002"}


def _rows(out: Path) -> dict[str, dict]:
    found = {}
    for name in ("collect.jsonl", "results.jsonl"):
        for line in (out / name).read_bytes().splitlines():
            row = orjson.loads(line)
            found[row.get("arm") or "source"] = row
    return found


@pytest.mark.parametrize("mas", sorted(FAILING))
def test_sdk_retries_are_counted_and_the_guidance_survives_them(mas, tmp_path):
    out = tmp_path / mas
    config = parse_config({
        "out": str(out), "mas": [mas], "tasks": [FAILING[mas]], "seeds": [0],
        "backend": {"kind": "stub", "seed": 0, "skill": 0.6, "faults": [429, 503],
                    "faults_every": 1},
        "methods": ["suspicious"], "attempts": 1, "rq1": False, "infra_backoff": 0,
        "max_error_rate": 0.0})
    Study(config, Console(file=io.StringIO())).run(workers=1, backend="warm")
    rows = _rows(out)
    source, arm = rows["source"], rows["suspicious"]
    assert source["status"] == "failed", f"{mas}/{FAILING[mas]} should fail: {source}"
    for row in (source, arm):  # every distinct request was refused once and retried
        assert row["error"] is None and row["status"] in ("passed", "failed"), row
        assert row["llm"]["provider_errors"] >= 1 and row["llm"]["calls"] >= 1, row["llm"]
        assert row["llm"]["provider_errors"] <= row["llm"]["calls"], row["llm"]
    assert arm["intervened"] and arm["delta"]
    child = symtrace.load_bundle(out / arm["bundle"])
    live = live_events(child)
    guided = [e for e in child.events if e.is_llm and e.id in live]
    refused, served = guided[0], guided[1]  # the anchor: refused once, then retried
    assert status_of(refused) in (429, 503) and status_of(served) < 400
    line = max(arm["delta"].splitlines(), key=len)  # a distinctive line of Δ
    needle = orjson.dumps(line).decode()[1:-1]  # as it appears inside JSON text
    for event in (refused, served):
        assert needle in orjson.dumps(event.request).decode(), event.id
