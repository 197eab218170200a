"""Where a replayed program runs: the recorded working directory when it exists on this
machine, else the current one; `--cwd DIR` says where. A committed bundle replayed from a
checkout must not pick up another copy of its program that happens to sit at the recorded
path (the reference-bundle tests were flaky while a regeneration clone existed there)."""

from __future__ import annotations

from pathlib import Path

from symtrace.errors import EXIT_DIVERGED, EXIT_NOT_APPROVED, EXIT_USAGE

from .conftest import run_cli

PROGRAM = 'print(open("note.txt").read().strip())\n'


def checkout(path: Path, note: str) -> Path:
    path.mkdir()
    (path / "prog.py").write_text(PROGRAM)
    (path / "note.txt").write_text(note)
    return path


def test_cwd_chooses_where_the_replayed_program_runs(tmp_path: Path):
    recorded_in = checkout(tmp_path / "regen", "one")
    bundle = tmp_path / "b"
    done = run_cli("record", "-o", str(bundle), "--", "python", "prog.py", cwd=recorded_in)
    assert done.returncode == 0, done.stderr
    (recorded_in / "note.txt").write_text("two")  # the recorded directory has moved on
    repo = checkout(tmp_path / "repo", "one")

    default = run_cli("replay", str(bundle), cwd=repo)  # runs where it was recorded
    assert default.returncode == EXIT_DIVERGED and default.stdout == "two\n", default.stderr
    assert "SYM-R107" in default.stderr

    # the recorded command in another directory is another launch: approved with --trust
    # (docs/security.md); your own command after -- runs in your directory without asking
    untrusted = run_cli("replay", str(bundle), "--cwd", ".", cwd=repo)
    assert untrusted.returncode == EXIT_NOT_APPROVED and untrusted.stdout == ""
    here = run_cli("replay", str(bundle), "--cwd", ".", "--trust", cwd=repo)
    assert here.returncode == 0, here.stderr
    assert here.stdout == "one\n"
    mine = run_cli("replay", str(bundle), "--", "python", "prog.py", cwd=repo)
    assert mine.returncode == 0 and mine.stdout == "one\n", mine.stderr

    missing = run_cli("replay", str(bundle), "--cwd", str(tmp_path / "nowhere"), cwd=repo)
    assert missing.returncode == EXIT_USAGE
    assert "--cwd" in missing.stderr and "not a directory" in missing.stderr
