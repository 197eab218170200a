"""Fail-closed replay: the `Replayer` (replayer.py) and one module per job it delegates:
matching, completion-order delivery, serving, the child trajectory and lineage, live
propagation and egress, divergence reports; anchor resolution (anchors.py)."""
