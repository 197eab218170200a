"""examples/crewai/sequential.py as it was recorded, then edited: the endpoint moved from api.openai.com to a compatible server.

bundles/divergent/crewai-endpoint-host holds the recording; replaying it runs this file.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "crewai"))
import sequential  # noqa: E402

os.environ["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"
sequential.main()
