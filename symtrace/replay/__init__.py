"""Fail-closed replay: the `Replayer`, completion-order delivery, anchor resolution."""
