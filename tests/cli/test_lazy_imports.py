"""Nothing heavy is imported before it is needed (issue 35, fast start).

Behavioural, not timed: each check runs a fresh interpreter and looks at sys.modules. The CLI
parses `--help` and a `record` command line without importing rich, httpx, the subcommands'
modules, the replayer or asyncio; `import symtrace` resolves its public names on first use.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests._support import python_ok

HEAVY = (
    "rich", "httpx", "httpx2", "asyncio", "aiohttp", "urllib3",
    "symtrace.api", "symtrace.replay.replayer", "symtrace.session.core", "symtrace.diagnosis",
    "symtrace.cli.diagnose", "symtrace.cli.attribute", "symtrace.cli.stub",
    "symtrace.cli.local_llm", "symtrace.cli.export", "symtrace.cli.view", "symtrace.cli.demo",
    "symtrace.cli.inspect", "symtrace.process.runner", "symtrace.frameworks.registry",
    "autogen", "crewai", "autogen_agentchat", "ag2", "openai",
)


def loaded_after(code: str) -> set[str]:
    """The HEAVY modules (or their submodules) in sys.modules after running *code*."""
    probe = (
        f"{code}\nimport json, sys\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(h for h in heavy if any(m == h or m.startswith(h + '.') "
        "for m in sys.modules))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_symtrace_loads_nothing_heavy() -> None:
    assert loaded_after("import symtrace") == set()


def test_top_level_help_lists_every_subcommand_without_importing_them() -> None:
    code = (
        "import contextlib, io\n"
        "from symtrace.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "assert 'attribute' in out.getvalue() and 'stub-llm' in out.getvalue(), out.getvalue()\n"
    )
    assert loaded_after(code) == set()


@pytest.mark.parametrize("argv", [
    ["record", "-o", "B", "--adapter", "crewai"],
    ["replay", "B", "--allow-host", "localhost"],
])
def test_parsing_a_command_line_imports_only_the_parser(argv: list[str]) -> None:
    code = (
        "from symtrace.cli import build_parser, _subcommand\n"
        f"argv = {argv!r}\n"
        "build_parser(_subcommand(argv)).parse_args(argv)\n"
    )
    assert loaded_after(code) == set()


def test_a_lazy_subcommand_gets_its_full_parser_when_dispatched() -> None:
    from symtrace.cli import build_parser

    args = build_parser("diagnose").parse_args(["diagnose", "B", "--json"])
    assert args.json is True and args.subcommand == "diagnose"
    with pytest.raises(SystemExit):  # the placeholder of an undispatched one takes nothing
        build_parser("").parse_args(["diagnose", "B", "--json"])


def test_public_names_resolve_on_first_use_and_keep_their_role() -> None:
    code = (
        "import symtrace, symtrace.replay.replayer, symtrace.record.recorder\n"
        "import inspect\n"
        "assert inspect.isfunction(symtrace.replay) and inspect.isfunction(symtrace.record)\n"
        "assert symtrace.replay.__module__ == 'symtrace.api'\n"
        "assert symtrace.Event.__name__ == 'Event' and set(dir(symtrace)) >= {'load_bundle'}\n"
        "try:\n"
        "    symtrace.no_such_name\n"
        "except AttributeError:\n"
        "    pass\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    python_ok(code)



# what a trivial program's instrumented process must not import: an HTTP library or a
# framework adapter it never uses, TLS (the egress patch of TLS sends waits for `import ssl`),
# the metadata scans, the other mode's machinery; and before a recording's first boundary
# call, none of the session machinery
CHILD_NEVER = ("httpx", "httpx2", "rich", "importlib.metadata", "symtrace.frameworks.contract",
               "ssl", "tempfile", "importlib.resources", "symtrace_ag2", "symtrace_ag2v1",
               "symtrace_crewai", "symtrace_autogen_agentchat")
SESSION = ("asyncio", "symtrace.session.core", "symtrace.session.scheduling",
           "symtrace.bundle.writer", "symtrace.model.graph", "symtrace.record")
PROBE = (
    "import json, sys\n"
    f"never = {CHILD_NEVER + SESSION!r}\n"
    "loaded = sorted(h for h in never if any(m == h or m.startswith(h + '.') "
    "for m in sys.modules))\n"
    "replayer = 'symtrace.replay.replayer' in sys.modules\n"
    "open(sys.argv[1], 'w').write(json.dumps([loaded, replayer]))\n"
    "print('hello')\n"
)


def test_a_trivial_program_s_instrumented_process_imports_only_its_mode(tmp_path) -> None:
    """Record and strict replay of `print('hello')`: the child starts its session without
    httpx (its seam waits for the import), any adapter (armed from the parent's declarations,
    imported with its framework) or the entry-point scan; a recording never loads the
    replayer, and either mode starts its session (the writer or the replayer, the scheduler,
    asyncio) only when a boundary hook imports the session core: this program has none."""
    program, seen = tmp_path / "probe.py", tmp_path / "seen.json"
    program.write_text(PROBE)
    bundle = tmp_path / "bundle"
    cli = [sys.executable, "-m", "symtrace"]
    done = subprocess.run([*cli, "record", "-o", str(bundle), "--quiet", "--",
                           sys.executable, str(program), str(seen)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(seen.read_text()) == [[], False]
    seen.unlink()
    done = subprocess.run([*cli, "replay", str(bundle), "--quiet", "--trust"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(seen.read_text()) == [[], False]


def test_the_parent_arms_every_installed_adapter_without_importing_one() -> None:
    code = (
        "import sys\n"
        "from symtrace.frameworks.registry import to_arm\n"
        "armed = to_arm(None)\n"
        "assert armed, 'no adapter found'\n"
        "loaded = [m for m in sys.modules if m.startswith('symtrace_')]\n"
        "assert not loaded, loaded\n"
    )
    python_ok(code)


PARENT_NEVER = ("asyncio", "importlib.metadata", "symtrace.session.core", "ssl",
                "symtrace.replay.replayer", "symtrace.replay.matching", "httpx", "rich")
# a strict replay that matched writes no bundle, walks no graph and renders no divergence
STRICT_REPLAY_NEVER = ("symtrace.bundle.writer", "symtrace.bundle.completion",
                       "symtrace.model.graph", "symtrace.model.divergence",
                       "symtrace.cli.replay_output", "symtrace.replay.anchor_resolution")


def test_the_cli_parent_of_record_and_replay_starts_no_session_machinery(tmp_path) -> None:
    """The `symtrace record` / strict `symtrace replay` process itself: no session, no
    scheduler or asyncio, no replay matching, no importlib.metadata (symtrace reads versions
    and entry points from the distributions' metadata files itself)."""
    (tmp_path / "hello.py").write_text("print('hello')\n")
    for argv, never in ((["record", "-o", "b", "--quiet", "--", sys.executable, "hello.py"],
                         PARENT_NEVER),
                        (["replay", "b", "--quiet", "--trust"],
                         PARENT_NEVER + STRICT_REPLAY_NEVER)):
        code = (
            "import json, sys\n"
            "from symtrace.cli import main\n"
            f"code = main({argv!r})\n"
            f"never = {never!r}\n"
            "print(json.dumps([code, sorted(h for h in never if any(m == h or "
            "m.startswith(h + '.') for m in sys.modules))]))\n"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout.splitlines()[-1]) == [0, []], argv
