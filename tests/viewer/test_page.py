"""The HTML report's model and page: content, escaping, determinism, diagnosis, diff, CLI."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import orjson
import pytest

import symtrace.diagnosis
from symtrace.bundle import Bundle, load_bundle
from symtrace.bundle.inspect import diff_bundles
from symtrace.cli import main
from symtrace.model.events import EventType
from symtrace.viewer import model as page_model_module
from symtrace.viewer.model import diff_model, page_model
from symtrace.viewer.page import render_page

BUNDLES = Path(__file__).resolve().parents[2] / "bundles"


def island(html: str) -> dict:
    match = re.search(r'<script type="application/json" id="symtrace-data">(.*?)</script>',
                      html, re.S)
    assert match is not None
    return orjson.loads(match.group(1))


class TestModel:
    def test_every_event_with_its_payloads_lanes_and_failures(self, big_bundle: Bundle) -> None:
        model = page_model(big_bundle)
        assert [e["id"] for e in model["events"]] == [e.id for e in big_bundle.events]
        assert model["lanes"] == ["planner", "researcher", "writer", "main"]
        first = model["events"][0]
        assert orjson.loads(first["request"]["text"]) == big_bundle.events[0].request
        failed = [e["id"] for e in model["events"] if e["failed"]]
        assert len(failed) == 1 and failed[0].startswith("tool_result_")
        assert big_bundle.event(failed[0]).response["error"]["type"] == "LookupError"

    def test_large_payloads_are_cut_with_their_length_kept(
        self, big_bundle: Bundle, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(page_model_module, "EMBED_LIMIT", 100)
        request = page_model(big_bundle, diagnosis=False)["events"][0]["request"]
        assert len(request["text"]) == 100 and request["length"] > 100

    def test_diagnosis_overlay_names_symptoms_and_the_anchor(self, big_bundle: Bundle) -> None:
        expected = symtrace.diagnosis.diagnose(big_bundle)
        diag = page_model(big_bundle)["diagnosis"]
        assert diag["status"] == "ok"
        assert diag["anchor"] == (expected.anchor.anchor if expected.anchor else None)
        flagged = {n.view.id for n in expected.nodes if n.evidence}
        assert flagged and set(diag["nodes"]) == flagged

    def test_a_failing_diagnosis_is_shown_not_raised(
        self, big_bundle: Bundle, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def broken(bundle: Bundle) -> None:
            raise RuntimeError("rules exploded <b>here</b>")

        monkeypatch.setattr(symtrace.diagnosis, "diagnose", broken)
        html = render_page(big_bundle)
        assert "Diagnosis failed: RuntimeError: rules exploded &lt;b&gt;here&lt;/b&gt;" in html
        assert len(island(html)["events"]) == len(big_bundle.events)

    def test_diff_aligns_by_identity_and_marks_the_first_divergence(self) -> None:
        left = load_bundle(BUNDLES / "crewai-sequential")
        right = load_bundle(BUNDLES / "crewai-openai_host")
        first = diff_bundles(left, right)
        diff = diff_model(left, right)
        assert not diff["identical"] and diff["first"] is not None
        row = diff["rows"][diff["first"]]
        assert row["left"]["id"] == first.left.id and not row["same"]
        assert all(r["same"] for r in diff["rows"][: diff["first"]])
        html = render_page(left, other=right, diagnosis=False)
        assert f'<tr id="diff-{diff["first"]}" class="differs first">' in html
        assert "First difference: " in html and "First divergence at position" not in html
        assert diff_model(left, left)["identical"]


class TestPage:
    def test_same_bundle_same_bytes(self, big_bundle: Bundle) -> None:
        again = load_bundle(big_bundle.path)
        assert render_page(big_bundle) == render_page(again)

    def test_bundle_text_is_never_markup(self, big_bundle: Bundle) -> None:
        html = render_page(big_bundle)
        assert "<img src=x" not in html
        assert "<script>document.title" not in html
        assert html.count("<script") == 2  # the data island and the page's own script
        raw = re.search(r'id="symtrace-data">(.*?)</script>', html, re.S).group(1)
        assert "<" not in raw and ">" not in raw
        # the payload itself survives intact inside the data
        texts = [e["response"]["text"] for e in island(html)["events"] if e["response"]]
        assert any("<img src=x onerror=" in text for text in texts)

    def test_only_the_pages_own_script_may_run_and_nothing_may_load(
        self, big_bundle: Bundle
    ) -> None:
        html = render_page(big_bundle)
        script = re.search(r"<script>(.*?)</script>", html, re.S).group(1)
        digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
        assert f"script-src 'sha256-{digest}'" in html
        assert "default-src 'none'" in html
        assert not re.search(r"(src|href)=\"(https?:)?//", html)

    def test_timeline_has_a_box_per_event_and_a_row_per_lane(self, big_bundle: Bundle) -> None:
        html = render_page(big_bundle)
        assert html.count('<rect class="ev ') == len(big_bundle.events)
        assert html.count('<text class="lane"') == 4
        assert len(re.findall(r'<rect class="ev tool_result[^"]*\bfailed\b', html)) == 1
        assert html.count('class="anchor-mark"') == 1  # the diagnosis picked an anchor

    def test_no_diagnosis(self, big_bundle: Bundle) -> None:
        html = render_page(big_bundle, diagnosis=False)
        assert "Diagnosis was not run" in html
        assert island(html)["diagnosis"]["status"] == "off"


def test_a_child_bundle_marks_its_live_events(big_bundle: Bundle) -> None:
    live = [e.id for e in big_bundle.events[-3:]]
    lineage = {"parent": "runs/parent", "anchor": live[0], "live_events": live}
    child = Bundle(big_bundle.path, {**big_bundle.manifest, "kind": "selective_replay",
                                     "lineage": lineage}, big_bundle.events)
    html = render_page(child, diagnosis=False)
    assert [e["id"] for e in island(html)["events"] if e["live"]] == live
    assert len(re.findall(r'<rect class="ev [^"]*\blive\b', html)) == 3
    assert "child of <code>runs/parent</code>" in html
    assert not any(e["live"] for e in island(render_page(big_bundle, diagnosis=False))["events"])


class TestCommand:
    def test_writes_the_page(self, tmp_path: Path) -> None:
        out = tmp_path / "r.html"
        bundle = str(BUNDLES / "autogen_agentchat-magentic_one")
        assert main(["view", bundle, "-o", str(out)]) == 0
        html = out.read_text()
        assert html.startswith("<!DOCTYPE html>")
        assert len(island(html)["events"]) == len(load_bundle(bundle).events)
        assert main(["view", bundle, "-o", str(out)]) == 93
        assert main(["view", bundle, "-o", str(out), "--force", "--diff",
                     str(BUNDLES / "autogen_agentchat-selector")]) == 0
        assert 'id="diff"' in out.read_text()

    def test_views_an_imported_chat_log(self, tmp_path: Path) -> None:
        log = tmp_path / "chat.json"
        log.write_bytes(orjson.dumps({"task": "Say hi.", "messages": [
            {"role": "user", "content": "Say hi."},
            {"role": "assistant", "name": "greeter", "content": "hi <b>there</b>"}]}))
        out = tmp_path / "chat.html"
        assert main(["view", str(log), "-o", str(out)]) == 0
        html = out.read_text()
        events = island(html)["events"]
        assert "agent_action" in {e["type"] for e in events}
        assert "hi <b>there</b>" not in html and "hi \\u003cb\\u003ethere" in html

    def test_bad_bundles_are_exit_91_and_write_nothing(self, tmp_path: Path) -> None:
        out = tmp_path / "r.html"
        assert main(["view", str(tmp_path / "nope"), "-o", str(out)]) == 91
        assert main(["view", str(BUNDLES / "crewai-sequential"), "-o", str(out),
                     "--diff", str(tmp_path / "nope")]) == 91
        assert list(tmp_path.iterdir()) == []


def test_every_event_type_has_a_color() -> None:
    from symtrace.viewer.timeline import COLORS

    assert set(COLORS) == {t.value for t in EventType}
