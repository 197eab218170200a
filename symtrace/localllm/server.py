"""``LocalLLM``: a real local model behind an OpenAI-compatible endpoint on loopback.

The counterpart of ``symtrace.stub.StubLLM`` for runs that need a real model: same shape
(context manager, ``url`` ending in ``/v1``, ``env()``), but the server is llama-cpp-python's
stock FastAPI server with the ``chatml-tools`` format, in a child process (the native library
and the model stay out of the caller's process; a crash there cannot take the caller down).
The child binds the socket itself and reports the port through a file, so port 0 has no race;
it exits on its own if this process dies.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import orjson

from symtrace.localllm.chat_format import DEFAULT_MAX_TOKENS, FORMAT_NAME
from symtrace.localllm.errors import LocalLLMStartError
from symtrace.localllm.protocol import STATS_PATH
from symtrace.localllm.weights import require_runtime, resolve_model_path
from symtrace.stub.server import StubLLM, check_loopback

MODEL_ALIAS = "smollm2-135m"
STDERR_TAIL_LINES = 40


def _positive_int(name: str, value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class LocalLLM:
    """A llama-cpp-python server for *model_path* (default: packaged SmolLM2-135M-Instruct).

    ``start()`` raises ``LocalLLMUnavailable`` when llama-cpp-python[server] or the weights
    are not installed and ``LocalLLMStartError`` when the process dies or does not answer
    ``/v1/models`` within *start_timeout* seconds; in both cases nothing is left running.
    *seed* is the model's sampling seed (outputs at temperature 0 do not depend on it).
    *n_threads* defaults to 1: on a busy 2-core machine llama.cpp's 2 threads wait for each
    other at every step and ran 10-25x slower than 1 thread (docs/local-llm.md).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        n_ctx: int = 8192,
        n_threads: int = 1,
        seed: int = 0,
        chat_format: str = FORMAT_NAME,
        *,
        model_alias: str = MODEL_ALIAS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        start_timeout: float = 120.0,
        python: str | None = None,
    ) -> None:
        check_loopback(host)
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
            raise ValueError(f"port must be in 0..65535, got {port!r}")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        self.model_path = model_path
        self.host = host
        self._requested_port = port
        self.n_ctx = _positive_int("n_ctx", n_ctx)
        self.n_threads = _positive_int("n_threads", n_threads)
        self.max_tokens = _positive_int("max_tokens", max_tokens)
        self.seed = seed
        self.chat_format = chat_format
        self.model_alias = model_alias
        self.start_timeout = float(start_timeout)
        self.python = python or sys.executable
        self._process: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._port: int | None = None
        self.start_seconds: float | None = None  # spawn → first /v1/models answer

    # -- lifecycle -------------------------------------------------------------------------

    def config(self, model: Path) -> dict[str, Any]:
        """The stock ``llama_cpp.server`` config file this server runs with."""
        return {
            "host": self.host,
            "port": self._requested_port,
            "models": [
                {
                    "model": str(model),
                    "model_alias": self.model_alias,
                    "chat_format": self.chat_format,
                    "n_ctx": self.n_ctx,
                    "n_threads": self.n_threads,
                    "n_threads_batch": self.n_threads,
                    "seed": self.seed,
                    "verbose": False,
                }
            ],
        }

    def start(self) -> LocalLLM:
        """Spawn the server and wait until it answers; returns self. Idempotent while running."""
        if self._process is not None:
            return self
        if self.python == sys.executable:
            require_runtime()
        model = resolve_model_path(self.model_path)
        workdir = Path(tempfile.mkdtemp(prefix="symtrace-local-llm-"))
        config_file, port_file = workdir / "config.json", workdir / "port"
        config_file.write_bytes(orjson.dumps(self.config(model), option=orjson.OPT_INDENT_2))
        log = (workdir / "stderr.log").open("wb")
        began = time.monotonic()
        try:
            process = subprocess.Popen(
                [self.python, "-m", "symtrace.localllm.serve", "--config", str(config_file),
                 "--host", self.host, "--port", str(self._requested_port),
                 "--port-file", str(port_file), "--parent-pid", str(os.getpid()),
                 "--max-tokens", str(self.max_tokens)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            shutil.rmtree(workdir, ignore_errors=True)
            raise LocalLLMStartError(f"cannot run {self.python}: {exc}") from exc
        finally:
            log.close()
        self._process, self._workdir = process, workdir
        try:
            self._port = self._wait_for_port(port_file, began)
            self._wait_ready(began)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def _remaining(self, began: float) -> float:
        return self.start_timeout - (time.monotonic() - began)

    def _check_alive(self, doing: str) -> None:
        assert self._process is not None
        code = self._process.poll()
        if code is not None:
            raise LocalLLMStartError(
                f"the local LLM server exited with code {code} while {doing}",
                self.stderr_tail(), code,
            )

    def _timeout(self, doing: str) -> LocalLLMStartError:
        return LocalLLMStartError(
            f"the local LLM server did not finish {doing} within {self.start_timeout:g} s",
            self.stderr_tail(),
        )

    def _wait_for_port(self, port_file: Path, began: float) -> int:
        while True:
            self._check_alive("binding its port")
            if port_file.exists():
                return int(port_file.read_text())
            if self._remaining(began) <= 0:
                raise self._timeout("binding its port")
            time.sleep(0.05)

    def _wait_ready(self, began: float) -> None:
        with httpx.Client(timeout=2.0, trust_env=False) as client:
            while True:
                self._check_alive("loading the model")
                try:
                    if client.get(f"{self.url}/models").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass  # not accepting yet: the model is loading
                if self._remaining(began) <= 0:
                    raise self._timeout("loading the model")
                time.sleep(0.1)

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 10 s). Safe to call twice."""
        process, workdir = self._process, self._workdir
        self._process = self._workdir = None
        self._port = None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if workdir is not None:
            shutil.rmtree(workdir, ignore_errors=True)

    def __enter__(self) -> LocalLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def stderr_tail(self, lines: int = STDERR_TAIL_LINES) -> str:
        if self._workdir is None:
            return ""
        try:
            text = (self._workdir / "stderr.log").read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # -- addresses -------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("LocalLLM is not started")
        return self._port

    # Addressed exactly like the stub (both need only ``host`` and ``port``).
    root_url = StubLLM.root_url  # ``http://host:port``
    url = StubLLM.url  # base URL for OpenAI clients, ``http://host:port/v1``

    def env(self) -> dict[str, str]:
        """Environment variables that point an OpenAI SDK at this server."""
        return {"OPENAI_BASE_URL": self.url, "OPENAI_API_KEY": "local-llm"}

    # -- observation -----------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Completion requests served so far, by path (counted in the server process)."""
        response = httpx.get(self.root_url + STATS_PATH, timeout=5.0, trust_env=False)
        response.raise_for_status()
        return dict(response.json()["requests"])

    @property
    def served(self) -> int:
        """Chat-completion requests answered so far."""
        return sum(n for path, n in self.stats().items() if path.endswith("/chat/completions"))
