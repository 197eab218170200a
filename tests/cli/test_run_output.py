"""Issue 21, points 6 and 8: what record, replay, repair and show print.

`repair` prints its plan under a header on stderr before the program runs, so the program's
output on stdout stays the program's; a strict replay says how many boundary calls were served
and how many live requests were made (the transport's counter); `show` summarises a final
result as the answer at every width; an adapter left unarmed for a framework the program
imported is named, not silent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from symtrace.bundle import load_bundle

from .conftest import ANSI, PROGRAMS, run_cli, too_wide

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


@pytest.mark.parametrize("width", [80, 120, 160])
def test_show_summarises_the_final_result_as_the_answer(prompted_bundle, width):
    done = run_cli("show", str(prompted_bundle), columns=width)
    assert done.returncode == 0, done.stderr
    assert not too_wide(done.stdout, width), done.stdout
    (final,) = [ln for ln in done.stdout.splitlines() if ln.startswith("final_result_0000")]
    assert "stdout_tail" not in final and '"exit_code"' not in final
    answer = load_bundle(prompted_bundle).final_result().response["value"]
    assert answer[:12] in final


def test_strict_replay_success_line_counts_served_calls_and_live_requests(prompted_bundle):
    done = run_cli("replay", str(prompted_bundle), "--quiet")
    assert done.returncode == 0, done.stderr
    assert not too_wide(done.stderr, 80), done.stderr
    lines = done.stderr.splitlines()
    at = next(i for i, ln in enumerate(lines) if "matched every recorded boundary call" in ln)
    counts = lines[at + 1]
    assert "served 3 boundary calls from the bundle" in counts  # 2 LLM calls, 1 tool call
    assert "0 live requests" in counts


def test_repair_plan_is_on_stderr_under_a_header_before_the_program(prompted_bundle, tmp_path,
                                                                     endpoint):
    child = tmp_path / "child"
    done = run_cli("repair", str(prompted_bundle), "-o", str(child), env=endpoint)
    assert done.returncode == 0, done.stderr[-3000:]
    assert not ANSI.search(done.stderr)
    # stdout is the program's own output and nothing else
    assert all(ln.startswith(("FIRST:", "ANSWER:")) for ln in done.stdout.splitlines() if ln)
    err = done.stderr
    assert "repair plan" in err and "Guidance" in err
    assert err.index("repair plan") < err.index("Guidance")
    result = err[err.index("Guidance"):]
    assert str(child) in result and "live" in result
    assert not too_wide(err, 80), err


def test_dry_run_prints_the_plan_to_stdout(prompted_bundle):
    done = run_cli("repair", str(prompted_bundle), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "repair plan" in done.stdout and "Guidance" in done.stdout


def test_an_imported_framework_whose_adapter_is_not_armed_is_named(tmp_path, endpoint):
    pytest.importorskip("autogen")
    pytest.importorskip("crewai")
    bundle = tmp_path / "wrong"
    done = run_cli("record", "-o", str(bundle), "--adapter", "crewai", "--", "python",
                   str(PROGRAMS / "ag2_plain.py"), env=endpoint)
    assert done.returncode == 0, done.stderr[-3000:]
    warning = [ln for ln in done.stderr.splitlines() if "not armed" in ln]
    assert warning, done.stderr
    assert "autogen" in done.stderr and "--adapter ag2" in done.stderr
    # the same program with its adapter armed, or with auto arming, records without it
    for extra in (["--adapter", "ag2"], []):
        again = run_cli("record", "-o", str(tmp_path / f"ok{len(extra)}"), *extra, "--",
                        "python", str(PROGRAMS / "ag2_plain.py"), env=endpoint)
        assert again.returncode == 0, again.stderr[-3000:]
        assert "not armed" not in again.stderr
