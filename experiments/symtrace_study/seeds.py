"""Seeds derived from names, so a row's seed does not depend on scheduling or order."""

from __future__ import annotations

import hashlib


def derive_seed(*parts: object) -> int:
    """A 31-bit seed from the study seed and the names of what it is for."""
    text = "\x1f".join(str(p) for p in parts)
    return int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) & 0x7FFFFFFF
