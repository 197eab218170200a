"""What the launcher (serve.py) and its parent (server.py, cli.py) agree on.

Kept apart so the parent never imports the launcher module (``python -m`` would then warn
that it was already imported, and the launcher pulls in llama_cpp).
"""

from __future__ import annotations

import os
from pathlib import Path

STATS_PATH = "/_symtrace/stats"  # GET: {"requests": {path: count}} of completion requests


def write_atomically(path: Path, text: str) -> None:
    """Readers (polling for the port file) never see a half-written file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
