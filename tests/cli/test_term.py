"""How wide to write and whether to colour: COLUMNS, NO_COLOR, FORCE_COLOR, TTY, TERM=dumb."""

from __future__ import annotations

import io

import pytest

from symtrace.cli import term


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR", "COLUMNS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TERM", "xterm-256color")


def test_a_tty_gets_colour_unless_no_color_or_dumb(monkeypatch):
    assert term.color(FakeTTY())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not term.color(FakeTTY())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not term.color(FakeTTY())


def test_a_pipe_gets_no_colour_unless_forced(monkeypatch):
    assert not term.color(io.StringIO())
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert term.color(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")  # NO_COLOR wins
    assert not term.color(io.StringIO())


def test_width_is_columns_else_80_for_a_pipe(monkeypatch):
    assert term.width(io.StringIO()) == 80
    monkeypatch.setenv("COLUMNS", "123")
    assert term.width(io.StringIO()) == 123
    monkeypatch.setenv("COLUMNS", "7")
    assert term.width(io.StringIO()) == term.MIN_WIDTH


def test_the_divergence_report_is_coloured_only_on_a_colour_terminal(monkeypatch):
    from types import SimpleNamespace

    from symtrace.cli.replay_output import print_divergence

    from .test_divergence_report import NEW, OLD, mismatch, request

    outcome = SimpleNamespace(report=mismatch(request(OLD), request(NEW)),
                              program_exit_code=1, report_json=None)
    tty, pipe = FakeTTY(), io.StringIO()
    print_divergence(outcome, tty)
    print_divergence(outcome, pipe)
    assert "\x1b[" in tty.getvalue() and "\x1b[" not in pipe.getvalue()
    assert "[-euros-]" in pipe.getvalue()
    assert "consequence" in pipe.getvalue()
