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

from symtrace.errors import EXIT_ADAPTER, EXIT_WRITE, SymtraceError

EXIT_COLLECTOR = 96


class ExportError(SymtraceError):
    """A bundle could not be exported."""


class ExportUnavailable(ExportError, ImportError):
    """The OpenTelemetry packages of the `otel` extra are not installed."""

    exit_code = EXIT_ADAPTER

    def __init__(self, missing: str) -> None:
        super().__init__(
            f"OpenTelemetry export needs the otel extra ({missing} is not installed): "
            "pip install 'symtrace[otel]'"
        )


class OutputExists(ExportError, FileExistsError):
    """The output file exists and --force was not given."""

    exit_code = EXIT_WRITE


class OutputNotWritable(ExportError, OSError):
    exit_code = EXIT_WRITE


class CollectorError(ExportError, ConnectionError):
    """The OTLP collector could not be reached, answered an error, or rejected spans."""

    exit_code = EXIT_COLLECTOR
