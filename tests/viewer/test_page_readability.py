"""Issue 21, points 4 and 8: the page says what `symtrace diagnose` says (one summary for
both), summarises final results as the answer, and its timeline is readable: big enough boxes,
a real axis with a title and labelled ticks, no notation ("position in O", "c_f")."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest

from symtrace.bundle import load_bundle
from symtrace.cli import main
from symtrace.viewer.page import render_page

BUNDLES = Path(__file__).resolve().parents[2] / "bundles"
CASES = ["ag2-tool_error", "labelled/ag2-ignored_error_writer", "crewai-tool_error",
         "autogen_agentchat-magentic_one"]


def visible_text(html: str) -> str:
    body = re.sub(r"<script.*?</script>|<style.*?</style>|<title>.*?</title>", " ", html,
                  flags=re.S)
    body = re.sub(r"</?(?:a|code|b|q|i|small)\b[^>]*>", "", body)  # inline: no gap in the text
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", body)).split())


def cli_lines(name: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    main(["diagnose", str(BUNDLES / name)])
    return [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]


@pytest.mark.parametrize("name", CASES)
def test_the_page_says_what_the_cli_says(name, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "400")  # one line per sentence, to compare with the page
    page = visible_text(render_page(load_bundle(BUNDLES / name)))
    said = [line for line in cli_lines(name, capsys) if line]
    assert said[0].startswith("Diagnosis of")
    headline = said[2] if said[1] == "What looks wrong" else said[1]
    assert headline in page
    where = [line for line in said if "repair" in line.lower() and "_0" in line]
    for line in where:
        assert line in page, line


def test_symptom_and_anchor_are_told_apart():
    page = visible_text(render_page(load_bundle(BUNDLES / "ag2-tool_error")))
    assert "(self)" not in page
    assert "tool_result_0000" in page and "agent_action_0000" in page
    assert "for suspicious node agent_action_0000" not in page


def test_no_notation_on_the_page():
    page = visible_text(render_page(load_bundle(BUNDLES / "ag2-tool_error")))
    for jargon in ("position in O", "c_f", "C1–C4 symptoms, anchor"):
        assert jargon not in page, jargon


def test_final_result_is_summarised_as_the_answer():
    bundle = load_bundle(BUNDLES / "ag2-tool_error")
    html = render_page(bundle)
    assert '"exit_code"' not in visible_text(html)  # the payload in the data island has it
    from symtrace.viewer.model import page_model

    final = page_model(bundle)["events"][-1]
    assert final["summary"].startswith("The converter has no rate for Bitcoin")


def test_timeline_has_a_real_axis_and_readable_boxes():
    html = render_page(load_bundle(BUNDLES / "ag2-tool_error"))
    svg = html[html.index('<svg xmlns="http://www.w3.org/2000/svg" class="timeline"'):]
    svg = svg[: svg.index("</svg>")]
    ticks = re.findall(r'<text class="tick"[^>]*>(\d+)</text>', svg)
    assert ticks == ["1", "2", "3", "4", "5"]  # each step of a short run, counted from 1
    assert 'class="axis"' in svg and "the order of events" in svg
    heights = {float(h) for h in re.findall(r'<rect class="ev[^"]*"[^>]* height="([\d.]+)"',
                                              svg)}
    assert heights and min(heights) >= 20
    width = float(re.search(r'class="timeline" width="([\d.]+)"', svg).group(1))
    assert width >= 600  # a 5-event run is not a thumbnail
