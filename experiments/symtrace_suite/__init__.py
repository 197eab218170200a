"""A local task suite for repair-vs-resample studies: services, tasks, MAS programs, a policy.

Modelled on the paper's benchmarks (WebArena-Verified Hard, AssistantBench): deterministic
HTTP services on 127.0.0.1 (`services`), tasks with native evaluators (`tasks`), one MAS per
framework (`mas`), and a task-aware stub LLM policy (`policy`). See INTERFACE.md / README.md.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).parent / "data"
