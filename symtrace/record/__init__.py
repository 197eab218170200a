"""Recording: the `Recorder` session and where it writes (`sinks`, the writer process); a
bundle is completed by `symtrace.bundle.completion`."""
