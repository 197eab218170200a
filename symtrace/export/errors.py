"""Errors of `symtrace export` and `symtrace view`, under the project's error tree.

    SymtraceError
    └── ExportError
        ├── ExportUnavailable   (also ImportError)      exit 94: the `otel` extra is missing
        ├── OutputExists        (also FileExistsError)  exit 93: refusing to overwrite
        ├── OutputNotWritable   (also OSError)          exit 93
        └── CollectorError      (also ConnectionError)  exit 96: unreachable, refused, rejected

Bad bundles raise the core BundleError (exit 91) before any of these can happen.
"""

from __future__ import annotations

import importlib.util

from symtrace.errors import EXIT_ADAPTER, EXIT_WRITE, SymtraceError

EXIT_COLLECTOR = 96


class ExportError(SymtraceError):
    """A bundle could not be exported."""


# What `symtrace.export.otel` imports, each with the distribution of the otel extra that
# brings it: an ImportError names only the top-level package ("google"), this names the module.
OTEL_MODULES = {
    "google.protobuf": "protobuf",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry.proto": "opentelemetry-proto",
    "opentelemetry.exporter.otlp.proto.common": "opentelemetry-exporter-otlp-proto-common",
}


def missing_otel_module(fallback: str) -> str:
    """The first module of OTEL_MODULES that cannot be imported, with its distribution."""
    for module, distribution in OTEL_MODULES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # its parent package is missing (or a stand-in)
            found = False
        if not found:
            return f"module {module} (package {distribution})"
    return f"module {fallback}"


class ExportUnavailable(ExportError, ImportError):
    """The OpenTelemetry packages of the `otel` extra are not installed."""

    exit_code = EXIT_ADAPTER

    def __init__(self, missing: str) -> None:
        super().__init__(
            "OpenTelemetry export needs the otel extra: pip install 'symtrace[otel]' "
            f"({missing} is not installed)"
        )


class OutputExists(ExportError, FileExistsError):
    """The output file exists and --force was not given."""

    exit_code = EXIT_WRITE


class OutputNotWritable(ExportError, OSError):
    exit_code = EXIT_WRITE


class CollectorError(ExportError, ConnectionError):
    """The OTLP collector could not be reached, answered an error, or rejected spans."""

    exit_code = EXIT_COLLECTOR
