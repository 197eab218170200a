"""Issue 38: what the help and the docs say is what the tool does.

The tests walk the real argparse tree (`symtrace.cli.build_parser`) and the markdown of
README.md and docs/, and fail when they disagree:

- every subcommand has a one-line help and a description, every argument a help text, and
  `SUB --help` renders;
- every `symtrace SUB --flag` a doc shows (in a code block or an inline code span, also
  `` `SUB --flag` `` in prose) names a subcommand and a flag that exist;
- every flag of every subcommand is documented: some file of README.md and docs/ shows it
  with its subcommand (a new flag needs its line of docs);
- the stub's routes (`symtrace.stub.handler.ROUTES`) are the ones docs/stub.md lists, and no
  doc names a `/_stub/…` path the stub does not serve;
- every exit code an error class carries is in README's exit-code table and in `--help`.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from symtrace.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

FENCE = re.compile(r"^```.*?$(.*?)^```", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"(?<!`)`((?:[^`\n]|\n(?!\n))+)`(?!`)")  # a span may wrap a line
# `symtrace SUB` where a shell would run it: line start, after a prompt, a pipe, `$(`, a path
COMMAND = re.compile(r"(?:^|(?<=\$ )|(?<=&& )|(?<=; )|(?<=\| )|(?<=/)|(?<=\$\())symtrace[ \t]+"
                     r"(-{0,2}[a-z][\w-]*)(.*)$", re.MULTILINE)
STOP = ("#", "|", "&&", ";", ">", "2>", "<", "&")  # the rest of the line is not symtrace's
FLAG = re.compile(r"^[\[(]*(--?[A-Za-z][\w-]*)")  # `--flag`, `[--flag`, `(--flag=X`


# -- the parser --------------------------------------------------------------------------------
@cache
def subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


@cache
def one_line_helps() -> dict[str, str | None]:
    parser = build_parser()
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {choice.dest: choice.help for choice in action._choices_actions}


def options(name: str) -> set[str]:
    return {flag for action in subparsers()[name]._actions for flag in action.option_strings}


# -- the markdown ------------------------------------------------------------------------------
def code_texts(text: str) -> Iterator[str]:
    """Fenced blocks (continuation lines joined) and inline code spans of *text*."""
    for block in FENCE.findall(text):
        yield block.replace("\\\n", " ")
    yield from INLINE.findall(FENCE.sub("", text))


def flags_after(rest: str) -> list[str]:
    """The flags of a command line's tail, up to `--` (the program's own) or shell syntax."""
    found = []
    for token in rest.split():
        if token == "--" or token.startswith(STOP):
            break
        match = FLAG.match(token)
        if match and len(match.group(1)) > 1:
            found.append(match.group(1))
    return found


@cache
def mentions() -> list[tuple[str, str, str, tuple[str, ...]]]:
    """(file, where, subcommand, flags) for every command a doc shows."""
    found = []
    subs = subparsers()
    for path in DOCS:
        name = str(path.relative_to(ROOT))
        for code in code_texts(path.read_text()):
            for match in COMMAND.finditer(code):
                sub, rest = match.group(1), match.group(2)
                found.append((name, match.group(0).strip()[:80], sub, tuple(flags_after(rest))))
            code = " ".join(code.split())
            first, _, rest = code.partition(" ")
            if first in subs and "--" in rest:
                found.append((name, code[:80], first, tuple(flags_after(rest))))  # `SUB --flag`
    return found


def test_the_docs_are_walked():
    assert len(DOCS) > 10
    commands = {sub for _, _, sub, _ in mentions()}
    assert {"record", "replay", "show", "verify", "diff", "export", "stub-llm"} <= commands


# -- every subcommand explains itself ----------------------------------------------------------
@pytest.mark.parametrize("name", sorted(subparsers()))
def test_every_subcommand_has_a_one_line_help_a_description_and_helped_arguments(name, capsys):
    parser = subparsers()[name]
    assert one_line_helps()[name], f"`symtrace --help` lists {name} without a description"
    assert parser.description, f"`symtrace {name} --help` has no description"
    bare = [a.dest for a in parser._actions
            if not isinstance(a, argparse._HelpAction) and a.help in (None, "")]
    assert not bare, f"symtrace {name}: arguments without help text: {bare}"
    with pytest.raises(SystemExit) as done:
        parser.parse_args(["--help"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: symtrace {name}")


def test_the_top_level_help_lists_every_subcommand_on_its_own_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    for name in subparsers():
        assert re.search(rf"^    {re.escape(name)}\b", out, re.MULTILINE), name


# -- docs -> code: nothing documented that the tool does not have ------------------------------
def test_every_documented_command_and_flag_exists():
    subs = subparsers()
    top = {flag for action in build_parser()._actions for flag in action.option_strings}
    wrong = []
    for name, where, sub, flags in mentions():
        if sub.startswith("-"):
            known = top
        elif sub not in subs:
            wrong.append(f"{name}: `{where}`: no subcommand {sub!r}")
            continue
        else:
            known = options(sub)
        wrong += [f"{name}: `{where}`: symtrace {sub} has no {flag}"
                  for flag in flags if flag not in known]
    assert not wrong, "\n".join(wrong)


# -- code -> docs: nothing the tool has that no doc shows --------------------------------------
def documented_flags() -> dict[str, set[str]]:
    """Per subcommand, the flags some doc shows with it: in a command line or an inline
    `SUB --flag` span, or in a file that shows `symtrace SUB` and names `--flag` in code."""
    shown: dict[str, set[str]] = {}
    for _, _, sub, flags in mentions():
        shown.setdefault(sub, set()).update(flags)
    for path in DOCS:
        codes = list(code_texts(path.read_text()))
        subs_here = {m.group(1) for code in codes for m in COMMAND.finditer(code)}
        flags_here = {m.group(1) for code in codes for token in code.split()
                      if (m := FLAG.match(token))}
        for sub in subs_here:
            shown.setdefault(sub, set()).update(flags_here)
    return shown


@pytest.mark.parametrize("name", sorted(subparsers()))
def test_every_flag_of_every_subcommand_is_documented(name):
    shown = documented_flags().get(name, set())
    assert shown or name in {sub for _, _, sub, _ in mentions()}, (
        f"no doc in README.md or docs/ shows `symtrace {name}`")
    missing = sorted(
        "/".join(action.option_strings) for action in subparsers()[name]._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction)
        and not shown.intersection(action.option_strings))
    assert not missing, (
        f"symtrace {name}: {missing} appear in no doc that shows `symtrace {name}` "
        "(document them in README.md or docs/)")


# -- the stub's routes -------------------------------------------------------------------------
def test_docs_stub_md_lists_exactly_the_routes_the_stub_serves():
    from symtrace.stub.handler import ROUTES

    text = (ROOT / "docs" / "stub.md").read_text()
    rows = re.findall(r"^\| (GET|POST) \| (.+?) \|", text, re.MULTILINE)
    documented = {(method, path) for method, cell in rows for path in re.findall(r"`(/[^`]*)`",
                                                                                 cell)}
    served = {(route.method, path) for route in ROUTES for path in route.paths}
    assert documented == served


def test_no_doc_names_a_stub_path_the_stub_does_not_serve():
    from symtrace.stub.handler import ROUTES

    served = {path for route in ROUTES for path in route.paths}
    named = {(str(path.relative_to(ROOT)), found) for path in DOCS
             for found in re.findall(r"/_stub/[\w-]+", path.read_text())}
    assert named, "no doc names the stub's request counter"
    assert not [(name, found) for name, found in named if found not in served]


def test_stub_help_lists_every_route(capsys):
    from symtrace.stub.handler import ROUTES

    with pytest.raises(SystemExit):
        subparsers()["stub-llm"].parse_args(["--help"])
    out = capsys.readouterr().out
    for route in ROUTES:
        for path in route.paths:
            assert path in out, path
        assert route.what in out


# -- exit codes --------------------------------------------------------------------------------
def error_exit_codes() -> set[int]:
    import symtrace.diagnosis.errors
    import symtrace.export.errors
    import symtrace.localllm.errors
    import symtrace.stub.scripted  # noqa: F401  (their error classes join the tree)
    from symtrace.errors import SymtraceError

    codes, todo = set(), [SymtraceError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if isinstance(getattr(cls, "exit_code", None), int):
            codes.add(cls.exit_code)
    return codes


def readme_exit_codes() -> set[int]:
    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Exit codes"):]
    table = table[: table.index("\n## ")]
    return {int(code) for cell in re.findall(r"^\| ([^|]+) \|", table, re.MULTILINE)
            for code in re.findall(r"\b\d+\b", cell)}


def test_every_exit_code_is_in_the_readme_table_and_in_help(capsys):
    from symtrace.cli import EXIT_CODES

    expected = error_exit_codes() | {0, 1, 130, 141, 143}
    assert expected - readme_exit_codes() == set()
    helped = {int(code) for code in re.findall(r"^  (\d+)", EXIT_CODES, re.MULTILINE)}
    helped |= {int(code) for code in re.findall(r"^  \d+ / (\d+)", EXIT_CODES, re.MULTILINE)}
    assert expected - helped == set()
    assert readme_exit_codes() - expected == set()  # nothing documented that nothing returns


def test_a_closed_pipe_ends_quietly_with_141(tmp_path):
    """`symtrace verify B | head -1`: the reader leaves; no traceback, exit 128 + SIGPIPE."""
    import subprocess
    import sys

    bundle = Path(__file__).resolve().parents[2] / "bundles" / "core-trip-planner"
    proc = subprocess.Popen([sys.executable, "-c", "import sys; from symtrace.cli import main; "
                             "sys.exit(main())", "verify", str(bundle)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before symtrace writes a line
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 141, err
    assert "Traceback" not in err
