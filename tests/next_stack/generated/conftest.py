"""Generated AG2 1.x programs: the generator's helpers (tests/generated) and its fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

GENERATED = Path(__file__).resolve().parents[2] / "generated"
if str(GENERATED) not in sys.path:  # gen_spec, gen_check, gen_harness, gen_ag2v1, ...
    sys.path.insert(0, str(GENERATED))

from gen_fixtures import _point_at_stub, gen_home, stochastic_stub  # noqa: E402

__all__ = ["_point_at_stub", "gen_home", "stochastic_stub"]
