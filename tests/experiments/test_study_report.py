"""Statistics and the report from rows: rates exclude system errors, pairs, RQ1, p-values."""

from __future__ import annotations

import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from symtrace_study import study as study_module
from symtrace_study.analysis import case_outcome, paired, rq1
from symtrace_study.config import METHODS, parse_config
from symtrace_study.report import STUB_BANNER, fmt_p, write_report
from symtrace_study.study import Study

from tests.experiments._support import FakeExecutor


def test_p_values_never_print_as_zero():
    assert fmt_p(1e-9) == "<0.001"
    assert fmt_p(0.0) == "<0.001"
    assert fmt_p(0.0123) == "0.012"
    assert fmt_p(None) == "–"


def test_a_system_error_is_no_outcome_not_a_failed_repair():
    assert case_outcome([{"status": "error"}]) is None
    assert case_outcome([{"status": "failed"}, {"status": "error"}]) is None
    assert case_outcome([{"status": "failed"}, {"status": "passed"}]) is True
    assert case_outcome([{"status": "failed"}]) is False


def _rows(case, arm, *statuses):
    return [{"phase": "repair", "case": case, "arm": arm, "attempt": i + 1, "status": s,
             "api_calls": 1} for i, s in enumerate(statuses)]


def test_pairs_drop_error_cases_and_count_discordant_pairs():
    cases = [{"case": f"c{i}", "mas": "m"} for i in range(4)]
    rows = (_rows("c0", "suspicious", "passed") + _rows("c0", "last", "failed")
            + _rows("c1", "suspicious", "passed") + _rows("c1", "last", "failed")
            + _rows("c2", "suspicious", "failed") + _rows("c2", "last", "passed")
            + _rows("c3", "suspicious", "error") + _rows("c3", "last", "passed"))
    [entry] = paired(cases, rows, [("suspicious", "last")], attempts=1)
    assert (entry["n"], entry["n10"], entry["n01"]) == (3, 2, 1)
    assert entry["delta_pp"] == pytest.approx(100 / 3)
    assert entry["p"] == pytest.approx(1.0) and entry["p_holm"] == pytest.approx(1.0)


def test_rq1_rep_k_and_paired_test():
    cases = [{"case": "a"}, {"case": "b"}]
    rows = []
    for case, replay, rerun in (("a", ["reproduced"] * 2, ["reproduced", "not_reproduced"]),
                                ("b", ["reproduced"] * 2, ["not_reproduced"] * 2)):
        for arm, statuses in (("replay", replay), ("rerun", rerun)):
            rows += [{"phase": "rq1", "case": case, "arm": arm, "attempt": i + 1, "status": s}
                     for i, s in enumerate(statuses)]
    table = rq1(cases, rows, 2)
    assert table["methods"]["replay"]["rep"] == {"1": 1.0, "2": 1.0}
    assert table["methods"]["rerun"]["rep"] == {"1": 0.25, "2": 0.0}
    assert (table["paired"]["n10"], table["paired"]["n01"]) == (2, 0)


def test_report_shows_all_six_methods_rq1_and_the_stub_banner(tmp_path, monkeypatch):
    config = parse_config({"out": str(tmp_path / "out"), "mas": ["plain"],
                           "tasks": ["shop-001", "wiki-001", "route-001"], "seeds": [0, 1, 2],
                           "attempts": 3, "rq1": {"k": 3}})
    monkeypatch.setattr(study_module, "open_executor", lambda *a: FakeExecutor())
    Study(config, Console(file=io.StringIO())).run()
    paths = write_report(config.out)
    md = (config.out / "report.md").read_text()
    page = (config.out / "report.html").read_text()
    for method in METHODS:
        assert f"| {method} |" in md
        assert f">{method}</text>" in page  # a bar per method in the chart
    assert "RQ1: failure reproduction" in md and "rep_3" in md
    assert STUB_BANNER in md and f"<blockquote><strong>{STUB_BANNER}</strong>" in page
    assert "0.000" not in md
    assert page.count("<svg") >= 2 and "n=" in page
    import re
    from xml.etree import ElementTree

    for svg in re.findall(r"<svg.*?</svg>", page, flags=re.S):
        texts = [e.text for e in ElementTree.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")]
        assert any(t and t.endswith("%") for t in texts)  # numbers on the bars
    summary = orjson.loads((config.out / "summary.json").read_bytes())
    assert set(summary["families"]["plain"]["methods"]) == set(METHODS)
    assert len(summary["families"]["plain"]["rq3"]) == 5  # one Holm family of five
    assert all(Path(p).exists() for p in paths)


def test_no_banner_for_a_real_backend(tmp_path, monkeypatch):
    config = parse_config({"out": str(tmp_path / "out"), "mas": ["plain"], "tasks": ["shop-001"],
                           "backend": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}})
    monkeypatch.setattr(study_module, "open_executor", lambda *a: FakeExecutor())
    Study(config, Console(file=io.StringIO())).run()
    write_report(config.out)
    assert STUB_BANNER not in (config.out / "report.md").read_text()


def _visible_text(page: str) -> str:
    """The page's text as a browser shows it, minus code spans and charts."""
    import html as html_mod
    import re

    page = re.sub(r"<svg.*?</svg>|<code>.*?</code>|<style>.*?</style>", " ", page, flags=re.S)
    return html_mod.unescape(re.sub(r"<[^>]+>", " ", page))


def test_html_report_reads_correctly(tmp_path, monkeypatch):
    """Issue 22 (6): Markdown rendered (no raw ** or backticks), the title first, the
    configuration, per-case rows linking to bundles, RQ1 explained, the pooled family named
    for what it is, no precise-looking intervals at tiny n, the stub's built-in results."""
    config = parse_config({"out": str(tmp_path / "out"), "mas": ["plain"],
                           "tasks": ["shop-001", "wiki-001", "route-001"], "seeds": [0, 1],
                           "attempts": 2, "rq1": {"k": 2}, "placement": "system"})
    monkeypatch.setattr(study_module, "open_executor", lambda *a: FakeExecutor())
    Study(config, Console(file=io.StringIO())).run(workers=2, backend="warm")
    write_report(config.out)
    md = (config.out / "report.md").read_text()
    page = (config.out / "report.html").read_text()
    text = _visible_text(page)
    assert "**" not in text and "`" not in text
    assert "<strong>0</strong>" in page or "<strong>" in page
    body = page.split("<body>", 1)[1]
    assert body.lstrip().startswith("<h1>") and body.index("<h1>") < body.index("<svg")
    for needle in ("Configuration", "skill 0.6", "mechanism-level", "none (rules only)",
                   "symtrace defaults", "Δ placement", "seeds", "run time", "warm ×2"):
        assert needle in text, needle
    assert "## Cases" in md and 'href="sources/plain/' in page and 'href="attempts/plain/' in page
    assert "replay to target, then live" in text and "regenerates live" in text
    assert "All MAS pooled" not in text or "Holm" in text.split("All MAS pooled", 1)[1][:120]
    assert "(descriptive)" not in md
    assert "n too small" in text  # 3-6 cases: no bootstrap interval shown as if precise
    assert "What the stub decides by construction" in text and "SUPPRESSION" in text
