"""Exporting bundles to other tools: OpenTelemetry spans (`symtrace export`, docs/export-otel.md).

`symtrace.export.spans` plans the spans with no dependency; `symtrace.export.otel` needs the
`otel` extra and raises ExportUnavailable (exit 94) without it.
"""
