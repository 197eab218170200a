"""The subcommands that live in their own module, imported only when dispatched.

`symtrace --help` lists them from this table; `symtrace NAME ...` imports NAME's module and
lets it define its arguments. Each module takes its one-line help from here (`summary`).
"""

from __future__ import annotations

# subcommand -> (module defining it, one-line help), in the order `symtrace --help` lists them
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "stub-llm": (
        "symtrace.cli.stub",
        "serve a stub LLM endpoint on loopback (OpenAI chat completions and Responses, "
        "Anthropic messages), scripted or stochastic",
    ),
    "local-llm": (
        "symtrace.cli.local_llm",
        "serve a real local model (SmolLM2-135M, llama-cpp-python) on loopback",
    ),
    "diagnose": (
        "symtrace.cli.diagnose",
        "say what looks wrong in a run, where it started and where to repair it",
    ),
    "repair": (
        "symtrace.cli.diagnose",
        "diagnose, then replay to where the problem started and go live with guidance",
    ),
    "attribute": (
        "symtrace.cli.attribute",
        "find the decisive step of a failed run by intervention (repair vs resample)",
    ),
    "export": (
        "symtrace.cli.export",
        "export a bundle as OpenTelemetry spans (OTLP JSON file or OTLP/HTTP)",
    ),
    "view": (
        "symtrace.cli.view",
        "write one self-contained HTML page: lanes, graph, events, diagnosis, diff",
    ),
}


def summary(name: str) -> str:
    return LAZY_COMMANDS[name][1]
