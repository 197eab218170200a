"""Recording: the `Recorder` session and the completion of a bundle (`outcome`)."""
