"""One MAS per framework, in the paper's shapes, over the suite's tools.

Each is a program: `python -m symtrace_suite.mas.<name> --task ID [--prompt TEXT]`.
"""

from __future__ import annotations

FRAMEWORKS = {
    "ag2": "symtrace_suite.mas.ag2_groupchat",
    "crewai": "symtrace_suite.mas.crewai_crew",
    "magentic_one": "symtrace_suite.mas.magentic_one",
}
