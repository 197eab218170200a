"""A real local model for dry runs: SmolLM2-135M behind llama-cpp-python's server.

``LocalLLM`` starts it on loopback (like ``symtrace.stub.StubLLM``), with the ``chatml-tools``
chat format that makes tool calling work for AG2, CrewAI and AgentChat. Importing this package
is cheap: llama_cpp is only imported in the server process.
"""

from __future__ import annotations

from symtrace.localllm.errors import LocalLLMError, LocalLLMStartError, LocalLLMUnavailable
from symtrace.localllm.server import LocalLLM
from symtrace.localllm.weights import default_model_path, missing_runtime_modules

__all__ = [
    "LocalLLM",
    "LocalLLMError",
    "LocalLLMStartError",
    "LocalLLMUnavailable",
    "default_model_path",
    "missing_runtime_modules",
]
