"""Repair-or-resample studies over the local task suite (the paper's RQ1–RQ3).

`python -m symtrace_study run CONFIG` collects source failures once, replays and reruns them
(RQ1), runs the six repair arms (RQ2/RQ3) and writes `results.jsonl` row by row;
`python -m symtrace_study report OUTDIR` turns the rows into Markdown and HTML. See
experiments/README.md.
"""
