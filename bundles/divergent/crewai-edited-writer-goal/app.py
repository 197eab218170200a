"""examples/crewai/sequential.py as it was recorded, then edited: the writer's goal now asks for long plans.

bundles/divergent/crewai-edited-writer-goal holds the recording; replaying it runs this file.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "crewai"))
import sequential  # noqa: E402

sequential.WRITER_GOAL = "Write long, detailed trip plans"
sequential.main()
