"""Recorded text is inert in every human-facing output (issue 34): control characters from a
bundle (screen clear, OSC 8 links, bidi overrides, other C0/C1) are shown as escapes by
`show`, `diff`, `diagnose`, divergence reports and the CLI's errors; the SVG graph is always
well-formed XML. Also: outputs to a read-only place end with exit 93, not a traceback."""

from __future__ import annotations

import errno
import re
import shutil
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import orjson
import pytest

from symtrace.cli import main
from symtrace.errors import EXIT_WRITE
from symtrace.model.divergence import Candidate, Difference, DivergenceKind, DivergenceReport
from symtrace.model.inert import inert

from .test_crafted_bundles import REFERENCE, events_of, reseal, write_events

EVIL = "\x1b[2J\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07\u202eexe.txt\x9b31m\r\x08"
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    bundle = tmp_path / "hostile"
    shutil.copytree(REFERENCE, bundle)
    records = events_of(bundle)
    for record in records:
        record["lane"] = "main" + EVIL
        record["agent"] = "agent" + EVIL
    write_events(bundle, records)
    manifest = orjson.loads((bundle / "manifest.json").read_bytes())
    manifest["task"] = "Plan a trip" + EVIL
    reseal(bundle, manifest)
    return bundle


def test_inert_escapes_every_control_and_keeps_text() -> None:
    assert inert("plain text, ünïcode ✓") == "plain text, ünïcode ✓"
    assert not UNSAFE.search(inert(EVIL))
    assert inert("a\x1b[2Jb") == "a\\x1b[2Jb"
    assert inert("x\ny") == "x\ny" and inert("x\ny", keep_lines=False) == "x\\x0ay"
    assert inert("\u202e") == "\\u202e"


def test_show_diff_verify_and_diagnose_print_no_control_character(
        hostile: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["show", str(hostile), "--width", "200"], ["show", str(hostile)],
                 ["diff", str(hostile), str(REFERENCE)], ["verify", str(hostile)],
                 ["diagnose", str(hostile)]):
        main(argv)
        captured = capsys.readouterr()
        found = UNSAFE.findall(captured.out + captured.err)
        assert not found, (argv, found)
        if argv[0] in ("show", "diff"):
            assert "\\x1b[2J" in captured.out, argv  # shown, as an escape


def test_svg_graph_is_well_formed_xml(hostile: Path, tmp_path: Path) -> None:
    svg = tmp_path / "g.svg"
    assert main(["show", str(hostile), "--graph", str(svg), "--json"]) == 0
    root = ElementTree.parse(svg).getroot()  # raises on a control character
    assert "\\x1b[2J" in "".join(root.itertext())


def test_cli_error_messages_escape_what_they_quote(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path / f"missing{EVIL}")]) == 91
    err = capsys.readouterr().err
    assert "symtrace: error:" in err and not UNSAFE.search(err)


def test_divergence_report_escapes_recorded_text() -> None:
    report = DivergenceReport(
        kind=DivergenceKind.REQUEST_MISMATCH, bundle="b", bundle_digest="sha256:00",
        position=0, event_id="agent_action_0000", lane="main" + EVIL, agent="a" + EVIL,
        boundary="llm", matched_before=0,
        expected={"messages": [{"content": "hello " * 30 + EVIL}]},
        actual={"messages": [{"content": "hello " * 30 + "bye" + EVIL}]},
        differences=(Difference("/messages/0/content", "hello " * 30 + EVIL,
                                "hello " * 30 + "bye" + EVIL),),
        nearest=(Candidate("agent_action_0001", 1, "agent_action", "l" + EVIL, "x" + EVIL,
                           "summary" + EVIL),),
        warnings=("warned" + EVIL,), hint="hint" + EVIL)
    for color in (False, True):
        text = report.render(100, color=color)
        own = re.sub(r"\x1b\[[0-9;]*m", "", text) if color else text  # the report's colours
        assert not UNSAFE.search(own), repr(own)


@pytest.mark.parametrize("argv", [
    ["view", str(REFERENCE), "-o", "OUT/v.html"],
    ["export", str(REFERENCE), "--otel", "OUT/o.json"],
    ["show", str(REFERENCE), "--graph", "OUT/g.svg", "--json"],
])
def test_an_unwritable_output_is_exit_93(argv: list[str], tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    def read_only(self: Path, data: bytes) -> int:
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(Path, "write_bytes", read_only)
    argv = [a.replace("OUT", str(tmp_path)) for a in argv]
    assert main(argv) == EXIT_WRITE
    err = capsys.readouterr().err
    assert "Read-only file system" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())
