"""Starting the program as an instrumented child: the bootstrap on its PYTHONPATH, one launch
file in, one hand-back file out (symtrace.process.protocol), its exit status and output
(symtrace.process.supervise)."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from symtrace._version import PACKAGE_ROOT
from symtrace.frameworks import registry
from symtrace.process.held_stderr import Held, held_path
from symtrace.process.protocol import HandBack, Launch, read_hand_back
from symtrace.process.supervise import ChildExit, run_child

BOOTSTRAP_DIR = Path(__file__).parent / "bootstrap"


def run_instrumented(
    argv: Sequence[str], cwd: str, env: dict[str, str], launch: Launch, *, quiet: bool,
    isolate: bool = False,
) -> tuple[ChildExit, HandBack | None]:
    """Run *argv* under *launch* (its `hand_back` path is chosen here) and return how it ended
    and what it handed back (None: it never started a session). A malformed hand-back raises
    HandBackError. *isolate*: in a private network namespace (isolation.py)."""
    with tempfile.TemporaryDirectory(prefix="symtrace-") as tmp:
        launch = replace(launch, hand_back=str(Path(tmp) / "hand-back.json"))
        launch_file = Path(tmp) / "launch.json"
        launch.write(launch_file)
        ended = _run(argv, cwd, {**env, **launch.environ(launch_file)}, quiet, isolate)
        return _release_held(ended, held_path(launch.hand_back)), read_hand_back(
            Path(launch.hand_back))


def _release_held(ended: ChildExit, path: Path) -> ChildExit:
    """After a replay diverged: print the program's last traceback, as it would have appeared,
    and keep the rest (its retries of the refused call) for the one-line summary."""
    if not path.exists():
        return ended
    held = Held.split(path.read_bytes().decode("utf-8", "replace"))
    sys.stderr.write(held.kept)
    sys.stderr.flush()
    return replace(ended, stderr_left_out=held.left_out)


def _run(argv: Sequence[str], cwd: str, env: dict[str, str], quiet: bool,
         isolate: bool) -> ChildExit:
    argv = list(argv)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable  # the interpreter symtrace runs in, where it is importable
    paths = [str(BOOTSTRAP_DIR), str(PACKAGE_ROOT)]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env = {**env, "PYTHONPATH": os.pathsep.join(paths)}
    before_exec = None
    if isolate:  # a strict replay's; imported here: ctypes is no recording's business
        from symtrace.process.isolation import enter_private_network as before_exec
    return run_child(argv, cwd, env, quiet=quiet, before_exec=before_exec)


def declared_adapters() -> tuple[tuple[str, str, str], ...]:
    """Every registered adapter, for the launch: the child arms from these without scanning
    entry points or importing an adapter before its framework (fast start)."""
    return tuple((d.name, d.entry, d.module) for d in registry.declarations())
