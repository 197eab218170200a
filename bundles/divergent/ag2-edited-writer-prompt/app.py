"""groupchat_auto as it was recorded, then edited: the writer's prompt now asks for French.

bundles/divergent/ag2-edited-writer-prompt holds the recording; replaying it runs this file.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples" / "ag2"))
import groupchat_auto  # noqa: E402

groupchat_auto.WRITER_PROMPT = 'You are the writer. Write the note in French, then say TERMINATE.'
sys.exit(groupchat_auto.main())
