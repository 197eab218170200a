"""Process mode: `symtrace record/replay -- CMD`. The parent side is runner.py (the replay run
and the public entry points), record_run.py (the record run), verdict.py (what a replay
amounts to) and spawn.py/supervise.py (starting and watching the child); the child side is
bootstrap/sitecustomize.py and child.py; protocol.py is all they say to each other."""
