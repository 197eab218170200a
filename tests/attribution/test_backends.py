"""`attribute --backend {threads,warm,ray}`: the same rollouts give the same result on each.

A failed AG2 run recorded as `python -m tool_error` (so the warm backend can fork it) against
a scripted stub that follows guidance; the attribution (one candidate, k = 1: a repair and a
resample, two at once) runs on threads, on the study's warm fork servers and on Ray actors,
and the canonical JSON of the three results is compared byte for byte (the output
directory, which differs by design, written as OUT)."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from symtrace.bundle.reader import load_bundle
from symtrace.diagnosis import attribution_backends
from symtrace.diagnosis.attribution_run import FinalMatchOutcome, attribute
from symtrace.process.runner import record_command
from symtrace.stub import StubLLM
from tests.attribution.test_attribute_frameworks import CASES

REPO = Path(__file__).resolve().parents[2]
PROGRAM_DIR = REPO / "examples" / "ag2"


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory):
    """(bundle, stub url, the threads backend's canonical result): shared by the tests."""
    _, guidance, success, rules, _ = CASES["ag2"]
    tmp = tmp_path_factory.mktemp("backends")
    with pytest.MonkeyPatch.context() as mp, StubLLM(
            script={"rules": rules, "default": {"content": "TERMINATE"}}) as stub:
        mp.chdir(PROGRAM_DIR)  # `python -m tool_error` finds its module and ag2_common here
        mp.setenv("OPENAI_BASE_URL", stub.url)
        mp.setenv("OPENAI_API_KEY", "sk-test")
        failed = tmp / "failed"
        recorded = record_command(failed, [sys.executable, "-m", "tool_error"], task="t",
                                  force=True, quiet=True)
        assert recorded.exit_code == 0
        run = _runner(failed, stub.url, guidance, success)
        baseline = run(tmp / "threads", "threads")
        yield run, tmp, baseline


def _runner(failed: Path, url: str, guidance: str, success: str):
    def run(out: Path, backend: str) -> bytes:
        result = attribute(failed, out=out, k=1, budget=1, guidance=guidance,
                           outcome=FinalMatchOutcome(re.compile(success)),
                           set_env={"OPENAI_BASE_URL": url}, jobs=2, backend=backend,
                           trust=True)
        return _canonical(result.to_json(), out)
    return run


def _canonical(data: dict[str, Any], out: Path) -> bytes:
    text = orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()
    return text.replace(str(out.resolve()), "OUT").replace(str(out), "OUT").encode()


def test_the_threads_result_is_the_attribution_it_should_be(failed_run):
    _, _, baseline = failed_run
    data = orjson.loads(baseline)
    (node,) = data["nodes"]
    assert (node["repair"]["successes"], node["resample"]["successes"]) == (1, 0)
    # the resample's repeated call is held; the repair's new call (USD) runs live
    assert data["tools"] == {"held": 1, "live": 1}
    assert all(r["child"].startswith("OUT/rollouts/") for r in data["rollouts"])


@pytest.mark.slow
def test_warm_backend_forks_and_gives_the_same_result(failed_run, monkeypatch):
    run, tmp, baseline = failed_run
    from symtrace_study.launch import WarmLauncher

    seen: list[tuple[list[str], dict[str, str], dict[str, str]]] = []
    close = WarmLauncher.close

    def noting_close(self: WarmLauncher) -> None:
        alive = [m for m, proc in self._servers.items() if proc.poll() is None]
        seen.append((alive, dict(self.refusals), dict(self._env)))
        close(self)

    monkeypatch.setattr(WarmLauncher, "close", noting_close)
    monkeypatch.chdir(PROGRAM_DIR)
    assert run(tmp / "warm", "warm") == baseline
    assert len(seen) == 2  # one fork server per thread (jobs=2), closed at the end
    seed = load_bundle(tmp / "failed").initial_state.get("hash_seed")
    for alive, refusals, env in seen:
        assert alive == ["tool_error"] and refusals == {}  # served, never declined
        assert seed is None or env["PYTHONHASHSEED"] == str(seed)  # the replay's own seed


@pytest.mark.slow
def test_ray_backend_gives_the_same_result(failed_run, monkeypatch):
    pytest.importorskip("ray", reason="the ray backend needs the `ray` extra")
    run, tmp, baseline = failed_run
    monkeypatch.chdir(PROGRAM_DIR)
    assert run(tmp / "ray", "ray") == baseline


def test_an_unknown_backend_is_refused_before_anything_is_written(tmp_path):
    from symtrace.diagnosis.errors import DiagnosisConfigError

    with pytest.raises(DiagnosisConfigError, match="--backend 'cloud'"):
        attribute(REPO / "bundles" / "ag2-tool_error", out=tmp_path / "a", backend="cloud",
                  outcome=FinalMatchOutcome(re.compile("x")))
    assert not (tmp_path / "a").exists()
    assert attribution_backends.BACKENDS == ("threads", "warm", "ray")


def test_ray_not_installed_is_refused_before_anything_is_written(tmp_path, monkeypatch):
    from symtrace.diagnosis.errors import DiagnosisConfigError

    monkeypatch.setitem(sys.modules, "ray", None)  # as if the `ray` extra were not installed
    with pytest.raises(DiagnosisConfigError, match=r"symtrace\[ray\]"):
        attribute(REPO / "bundles" / "ag2-tool_error", out=tmp_path / "a", backend="ray",
                  outcome=FinalMatchOutcome(re.compile("x")), trust=True)
    assert not (tmp_path / "a").exists()
