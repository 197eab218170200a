"""`symtrace view`: one self-contained HTML page per bundle (docs/viewer.md)."""
