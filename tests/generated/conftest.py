"""Fixtures of the generated-program check (defined in gen_fixtures.py, shared with the
second environment's tests/next_stack/generated)."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the gen_* helper modules
    sys.path.insert(0, str(HERE))

from gen_fixtures import _point_at_stub, gen_home, stochastic_stub  # noqa: E402

__all__ = ["_point_at_stub", "gen_home", "stochastic_stub"]
