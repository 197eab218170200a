"""Recording: the `Recorder` session and the bundle it writes (`recording`); a bundle is
completed by `symtrace.bundle.completion`."""
