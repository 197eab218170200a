"""`symtrace show` as a table: one line per event, no line wider than the console, every
event id whole; the narrow layout says what it left out; --json is untouched."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import openai
import orjson
import pytest
from rich.console import Console

import symtrace
from symtrace.bundle import load_bundle
from symtrace.bundle.inspect import LAYOUTS, layout_for, show_json, show_table
from symtrace.cli import main
from symtrace.stub import StubLLM

REPO = Path(__file__).resolve().parents[2]
REFERENCE = sorted(p.parent for p in (REPO / "bundles").glob("*/manifest.json"))


def render(bundle: symtrace.Bundle, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), record=True, color_system=None)
    show_table(bundle, console)
    return console.export_text().splitlines()


def assert_fits(lines: list[str], bundle: symtrace.Bundle, width: int) -> None:
    assert max(len(line) for line in lines) <= width
    table = "\n".join(lines)
    for event in bundle.events:  # whole ids, each at the start of exactly one row
        rows = [line for line in lines if re.match(rf"(◆\s+|\s+)?{event.id}\b", line)]
        assert len(rows) == 1, (event.id, table)


@pytest.mark.parametrize("path", REFERENCE, ids=lambda p: p.name)
@pytest.mark.parametrize("width", [80, 200])
def test_reference_bundles_fit_and_keep_every_id(path: Path, width: int):
    bundle = load_bundle(path)
    lines = render(bundle, width)
    assert_fits(lines, bundle, width)


def test_narrow_layout_summarises_and_names_what_it_hides():
    bundle = load_bundle(REPO / "bundles" / "ag2-groupchat_auto")
    narrow = render(bundle, 80)
    header = next(line for line in narrow if line.startswith("id"))
    assert header.split() == ["id", "kind", "who", "summary"]
    assert "(speaker_selection) planner" in "\n".join(narrow)
    assert any("not shown at width 80: type, parents, request, response, hashes" in line
               for line in narrow)
    wide = render(bundle, 200)
    header = next(line for line in wide if line.startswith("id"))
    assert header.split() == list(LAYOUTS[0][1])
    assert not any("not shown" in line for line in wide)
    assert any("1e17113a 70854eef" in line for line in wide)  # hashes only when wide


def test_layouts_by_width():
    assert layout_for(80)[-1] == "summary"
    assert "parents" in layout_for(110) and "hashes" not in layout_for(149)
    assert "hashes" in layout_for(150)


@symtrace.tool
def echo(text: str) -> str:
    return text


def test_markup_and_long_values_are_printed_literally_on_one_line(tmp_path: Path):
    with symtrace.record(tmp_path / "b", adapters=[]):
        for index in range(210):
            echo(f"[bold]{index}[/bold] [/] " + "x" * 300)
    bundle = load_bundle(tmp_path / "b")
    assert len(bundle.events) > 400
    for width in (80, 200):
        lines = render(bundle, width)
        assert_fits(lines, bundle, width)
        assert any("[bold]0[/bold] [/]" in line for line in lines)


def test_live_events_of_a_child_bundle_are_flagged(tmp_path: Path):
    def program(stub: StubLLM) -> None:
        client = openai.OpenAI(base_url=stub.url, api_key="sk-test", max_retries=0)
        for text in ("one", "two", "three"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": text}]
            )

    with StubLLM(script={"rules": [], "default": {"content": "ok"}}) as stub:
        with symtrace.record(tmp_path / "parent", adapters=[]):
            program(stub)
        with symtrace.replay(tmp_path / "parent", anchor="agent_action_0001",
                             guidance="Be brief.", out=tmp_path / "child", adapters=[]):
            program(stub)
    child = load_bundle(tmp_path / "child")
    live = set(child.lineage["live_events"])
    for width in (80, 200):
        lines = render(child, width)
        assert_fits(lines, child, width)
        flagged = {line.split()[1] for line in lines if line.startswith("◆")}
        assert flagged == live and live


def test_cli_uses_columns_and_keeps_json(capsys, monkeypatch):
    path = REPO / "bundles" / "ag2-groupchat_auto"
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    assert main(["show", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads(orjson.dumps(show_json(load_bundle(path))))
    assert data["schema"] == "symtrace.show/1"


def test_a_rate_limited_call_the_sdk_retried_reads_as_such(tmp_path: Path):
    """A recording with a 429 and the SDK's retry: the failed attempt is "HTTP 429,
    retried", not its raw error body; the attempt that succeeded shows its reply."""
    from symtrace.stub.reply import error_reply

    with StubLLM(script={"rules": [], "default": {"content": "fine"}}) as stub:
        answer, calls = stub.answer, []

        def first_fails(body, index):
            calls.append(index)
            return error_reply(429, "slow down") if len(calls) == 1 else answer(body, index)

        stub.answer = first_fails
        client = openai.OpenAI(base_url=stub.url, api_key="sk-test", max_retries=1)
        with symtrace.record(tmp_path / "b", adapters=[]):
            client.with_options(timeout=5).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "hi"}])
        client.close()
    bundle = load_bundle(tmp_path / "b")
    for width in (80, 200):
        lines = render(bundle, width)
        assert_fits(lines, bundle, width)
        first, second = (next(line for line in lines if line.lstrip().startswith(e.id))
                         for e in bundle.events if e.is_llm)
        assert "HTTP 429, retried" in first and '"error"' not in first
        assert "fine" in second and "HTTP" not in second
