"""Killed and interrupted recordings: status passed through, bundle readable and marked, replay
never a success.

The kill points are generated: before the bootstrap (a shell that kills itself), right after
it, after every boundary crossing of tests/integrity/programs/kill_points.py, in the middle
of a streamed answer; the `symtrace record` process itself killed (SIGKILL), interrupted
(SIGINT to the process group, as Ctrl-C does, and to symtrace alone) and terminated
(SIGTERM); and every torn state a writer killed mid-append can leave (each byte offset of the
last line of each data file, a missing sums line).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from symtrace.bundle import blobs, load_bundle, verify_bundle
from symtrace.bundle.writer import BundleWriter
from symtrace.errors import EXIT_DIVERGED
from symtrace.model.redaction import Redactor

PROGRAM = str(Path(__file__).parent / "programs" / "kill_points.py")
CROSSINGS = 6  # boundary crossings of the program (events: one per LLM call, two per tool)
EVENTS_AFTER = {0: 0, 1: 1, 2: 3, 3: 4, 4: 5, 5: 7}  # events on disk after the N-th crossing
pytestmark = pytest.mark.slow


def symtrace_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "symtrace", *args]


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


@pytest.fixture
def env(stub_llm):
    return {"OPENAI_BASE_URL": stub_llm.url, "OPENAI_API_KEY": "sk-test"}


def record(out: Path, env: dict[str, str], *program: str) -> subprocess.CompletedProcess[str]:
    return run(symtrace_cmd("record", "-o", str(out), "--", *program), env)


def assert_incomplete_and_unreplayable(bundle: Path, status: str, events: int | None) -> None:
    loaded = load_bundle(bundle)
    assert not loaded.complete
    assert loaded.manifest["outcome"]["status"] == status
    if events is not None:
        assert len(loaded.events) == events
    verify_bundle(bundle)
    report = bundle.parent / f"{bundle.name}-report.json"
    replay = run(symtrace_cmd("replay", str(bundle), "--quiet", "--report-json", str(report)), {})
    assert replay.returncode == EXIT_DIVERGED, replay.stderr
    assert_no_symtrace_traceback(replay.stderr)
    result = orjson.loads(report.read_bytes())
    assert result["status"] == "recording_incomplete"
    assert "recording incomplete" in replay.stderr
    recorded = len([e for e in loaded.events if e.type.value != "final_result"])
    assert result["recorded_events"] == recorded
    if result["matched_events"] is not None:
        assert result["matched_events"] <= recorded


def assert_no_symtrace_traceback(stderr: str) -> None:
    """The replayed program may print its own traceback (a refused call raises in it); the
    symtrace process itself must not."""
    assert "symtrace/__main__.py" not in stderr and "symtrace/cli" not in stderr, stderr


KILL_POINTS = [str(n) for n in range(CROSSINGS)] + ["stream"]


@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_program_killed_at_every_crossing(kill_at, tmp_path, env):
    out = tmp_path / "b"
    result = record(out, {**env, "KILL_AT": kill_at}, "python", PROGRAM)
    assert result.returncode == 128 + signal.SIGKILL, result.stderr
    assert "killed by SIGKILL" in result.stderr and "Traceback" not in result.stderr
    expected = EVENTS_AFTER[3] if kill_at == "stream" else EVENTS_AFTER[int(kill_at)]
    assert_incomplete_and_unreplayable(out, "killed", expected)
    assert load_bundle(out).manifest["outcome"]["signal"] == "SIGKILL"


def test_program_killed_before_the_bootstrap(tmp_path, env):
    out = tmp_path / "b"
    result = record(out, env, "sh", "-c", "kill -KILL $$")
    assert result.returncode == 137, result.stderr
    assert "not instrumented" not in result.stderr and "Traceback" not in result.stderr
    assert_incomplete_and_unreplayable(out, "killed", 0)


def _interruptible() -> None:
    # A shell without job control starts background commands with SIGINT ignored, and the
    # ignore is inherited: the recorder and the program would then never see Ctrl-C, as
    # under nohup. Give them the terminal's default whatever launched the test run.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _gated(tmp_path: Path, env: dict[str, str], at: int) -> tuple[subprocess.Popen[str], Path]:
    gate = tmp_path / "gate"
    proc = subprocess.Popen(
        symtrace_cmd("record", "-o", str(tmp_path / "b"), "--", "python", PROGRAM),
        env={**os.environ, **env, "KILL_AT": str(at), "KILL_GATE": str(gate)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=_interruptible,
    )
    _wait_until(lambda: gate.exists() or proc.poll() is not None, "the gate")
    assert gate.exists(), proc.communicate()  # the recording ended before reaching it
    return proc, tmp_path / "b"


def _wait_until(done: Callable[[], bool], what: str, timeout: float = 60) -> None:
    """Poll *done* until it holds (AssertionError naming *what* after *timeout* seconds)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"waited {timeout:.0f} s for {what}"
        time.sleep(0.05)


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


@pytest.mark.parametrize("how", ["ctrl-c", "sigint-to-symtrace", "sigterm-to-symtrace"])
def test_interrupted_recording(how, tmp_path, env):
    proc, out = _gated(tmp_path, env, at=2)
    if how == "ctrl-c":  # the terminal signals the whole foreground process group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGTERM if how.startswith("sigterm") else signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    word, code = ("terminated", 143) if how.startswith("sigterm") else ("interrupted", 130)
    assert proc.returncode == code, stderr
    assert word in stderr and "Traceback" not in stderr
    assert_incomplete_and_unreplayable(out, word, EVENTS_AFTER[2])


def test_symtrace_itself_killed_leaves_an_unsealed_readable_bundle(tmp_path, env):
    proc, final = _gated(tmp_path, env, at=2)
    # written beside its path until sealed (docs/security.md, *Output paths*): a killed
    # recorder leaves it there, and nothing at the path
    out = final.with_name(f".{final.name}.partial-{proc.pid}")
    # The group kill below ends the writer process too, and a killed writer loses the frames
    # it has not written yet (docs/recording-process.md): wait until it wrote what the program
    # sent before the gate, as it does within its pause, so the test does not race it.
    _wait_until(lambda: _lines(out / "events.jsonl") >= EVENTS_AFTER[2],
                "the events sent before the gate")
    proc.send_signal(signal.SIGKILL)  # the program is left running, gated: end it too
    proc.wait(timeout=60)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert not final.exists()
    loaded = load_bundle(out)
    assert not loaded.sealed and not loaded.complete
    assert len(loaded.events) == EVENTS_AFTER[2]
    assert any("unsealed" in w for w in loaded.warnings)
    report = tmp_path / "r.json"
    replay = run(symtrace_cmd("replay", str(out), "--quiet", "--report-json", str(report)), {})
    assert replay.returncode == EXIT_DIVERGED
    assert_no_symtrace_traceback(replay.stderr)
    assert orjson.loads(report.read_bytes())["status"] == "recording_incomplete"


@pytest.fixture
def finished(tmp_path, env):
    out = tmp_path / "finished"
    assert record(out, env, "python", PROGRAM).returncode == 0
    return out


def _unsealed_copy(bundle: Path, target: Path) -> Path:
    shutil.copytree(bundle, target)
    manifest = orjson.loads((target / "manifest.json").read_bytes())
    manifest.pop("digest")
    manifest.update(complete=False)
    manifest.pop("outcome", None)
    (target / "manifest.json").write_bytes(orjson.dumps(manifest))
    sums = (target / "sums.jsonl").read_bytes().split(b"\n")
    (target / "sums.jsonl").write_bytes(b"\n".join(sums[:-2]) + b"\n")  # drop the trailer
    return target


def _drop_events_from(bundle: Path, ref: str) -> None:
    lines = (bundle / "events.jsonl").read_bytes().split(b"\n")[:-1]
    first = next(
        (i for i, line in enumerate(lines) if ref in blobs.refs_in(orjson.loads(line))), len(lines)
    )
    for name in ("events.jsonl", "sums.jsonl"):
        kept = (bundle / name).read_bytes().split(b"\n")[:first]
        (bundle / name).write_bytes(b"".join(line + b"\n" for line in kept))


def test_writer_killed_mid_append_every_torn_state(finished, tmp_path):
    """Each byte offset of the last line of each data file, as a killed writer leaves it."""
    base = _unsealed_copy(finished, tmp_path / "base")
    full = len(load_bundle(base).events)
    cases = 0
    for name in ("events.jsonl", "blobs.jsonl", "sums.jsonl"):
        data = (base / name).read_bytes()
        start = data.rstrip(b"\n").rfind(b"\n") + 1
        for cut in range(start, len(data), max(1, (len(data) - start) // 40)):
            torn = tmp_path / f"torn-{name}-{cut}"
            shutil.copytree(base, torn)
            (torn / name).write_bytes(data[:cut])
            if name == "blobs.jsonl":  # blobs go first: the event naming it was not written
                _drop_events_from(torn, data[start : start + 71].decode())
            if name == "events.jsonl":  # sums go last: the torn event's sums were not written
                sums = (torn / "sums.jsonl").read_bytes().split(b"\n")
                (torn / "sums.jsonl").write_bytes(b"\n".join(sums[:-2]) + b"\n")
            loaded = load_bundle(torn)  # a readable prefix, never an error
            assert 0 < len(loaded.events) <= full
            writer = BundleWriter.reopen(torn, redactor=Redactor())  # the parent seals it
            writer.finalize(complete=False, outcome={"status": "killed", "exit_code": 137})
            sealed = verify_bundle(torn)
            assert sealed.sealed and not sealed.complete
            assert len(sealed.events) == len(loaded.events)
            cases += 1
            shutil.rmtree(torn)
    assert cases > 30
