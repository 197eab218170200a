"""What a bundle's environment may set, and consent to a bundle's command
(symtrace/process/consent.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from symtrace.errors import EXIT_NOT_APPROVED, ReplayNotApproved
from symtrace.process import consent
from symtrace.process.consent import ENDPOINT, LaunchPlan, bundle_env, require_consent


@pytest.fixture(autouse=True)
def _own_store(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_only_captured_behaviour_variables_are_applied(tmp_path):
    bundle = tmp_path / "b"
    env = bundle_env({
        "OPENAI_MODEL": "gpt", "LANG": "C.UTF-8", "TZ": "UTC", "MY_FLAG": "1", "OTHER": "x",
        "PYTHONPATH": "/x", "PYTHONSTARTUP": "/x", "PYTHONHOME": "/x", "LD_PRELOAD": "/x.so",
        "DYLD_INSERT_LIBRARIES": "/x", "HTTPS_PROXY": "http://p", "https_proxy": "http://p",
        "SSL_CERT_FILE": "/x", "SYMTRACE_CHILD": "/x", "OPENAI_BASE_URL": "http://evil/v1",
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://evil", "OPENAI_API_HOST": "evil",
        "OPENAI_FILE": f"{bundle}/payload.py", "PATH": "/evil", "BASH_ENV": "/x",
    }, kept=["MY_FLAG", "PYTHONPATH", "LD_PRELOAD"], bundle_dir=bundle)
    assert env.applied == {"OPENAI_MODEL": "gpt", "LANG": "C.UTF-8", "TZ": "UTC", "MY_FLAG": "1"}
    assert env.withheld["OPENAI_BASE_URL"] == ENDPOINT
    assert env.withheld["OPENAI_API_HOST"] == ENDPOINT
    assert "inside the bundle" in env.withheld["OPENAI_FILE"]
    assert set(env.withheld) == {
        "OTHER", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "LD_PRELOAD",
        "DYLD_INSERT_LIBRARIES", "HTTPS_PROXY", "https_proxy", "SSL_CERT_FILE", "SYMTRACE_CHILD",
        "OPENAI_BASE_URL", "OTEL_EXPORTER_OTLP_ENDPOINT", "OPENAI_API_HOST", "OPENAI_FILE",
        "PATH", "BASH_ENV"}


def test_an_environment_of_the_wrong_type_applies_nothing(tmp_path):
    assert bundle_env(["PYTHONPATH=/x"], bundle_dir=tmp_path).applied == {}
    assert bundle_env({"OPENAI_X": 1}, bundle_dir=tmp_path).withheld == {"OPENAI_X": "not a string"}


def _plan(tmp_path: Path, **kw) -> LaunchPlan:
    fields = {"argv": ["sh", "-c", "echo \x1b[2J"], "cwd": str(tmp_path),
              "env": bundle_env({"LANG": "C"}, bundle_dir=tmp_path),
              "argv_from_user": False, "cwd_from_user": False, **kw}
    return LaunchPlan(**fields)


def test_a_command_nobody_approved_is_refused_without_a_terminal(tmp_path):
    said: list[str] = []
    with pytest.raises(ReplayNotApproved) as info:
        require_consent(_plan(tmp_path), trust=False, say=said.append)
    assert info.value.exit_code == EXIT_NOT_APPROVED == 97
    assert "sh -c 'echo \\x1b[2J'" in said[0]  # shown, inert
    assert "\x1b" not in said[0]
    assert not consent.approvals_path().exists()


def test_trust_runs_it_without_keeping_an_approval(tmp_path):
    assert require_consent(_plan(tmp_path), trust=True, say=lambda _: None) == "trusted"
    assert not consent.is_approved(_plan(tmp_path).digest)


def test_a_confirmation_at_a_terminal_is_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(consent, "_interactive", lambda: True)
    monkeypatch.setattr("sys.stdin", type("In", (), {"readline": lambda self: "y\n"})())
    assert require_consent(_plan(tmp_path), trust=False, say=lambda _: None) == "confirmed"
    assert require_consent(_plan(tmp_path), trust=False, say=lambda _: None) == "approved"
    other = _plan(tmp_path, cwd=str(tmp_path / "elsewhere"))  # another launch: asks again
    monkeypatch.setattr(consent, "_interactive", lambda: False)
    with pytest.raises(ReplayNotApproved):
        require_consent(other, trust=False, say=lambda _: None)


def test_your_own_command_in_your_directory_does_not_ask(tmp_path):
    mine = _plan(tmp_path, argv_from_user=True, cwd_from_user=True)
    assert require_consent(mine, trust=False, say=lambda _: None) == "yours"
    theirs_dir = _plan(tmp_path, argv_from_user=True, cwd_from_user=False)
    with pytest.raises(ReplayNotApproved):
        require_consent(theirs_dir, trust=False, say=lambda _: None)


def test_a_recording_approves_its_own_command(tmp_path):
    manifest = {"config": {"command": {"argv": ["python", "app.py"], "cwd": str(tmp_path),
                                       "env": {"LANG": "C", "OPENAI_BASE_URL": "http://x"}}}}
    consent.approve_recorded(manifest, tmp_path / "b")
    plan = _plan(tmp_path, argv=["python", "app.py"],
                 env=bundle_env({"LANG": "C", "OPENAI_BASE_URL": "http://y"},
                                bundle_dir=tmp_path / "b"))
    assert require_consent(plan, trust=False, say=lambda _: None) == "approved"
