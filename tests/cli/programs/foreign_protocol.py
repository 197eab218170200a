"""A program whose symtrace speaks another hand-back protocol when FOREIGN_PROTOCOL is set (as
if it had imported another symtrace than the one that started it)."""

import os

if os.environ.get("FOREIGN_PROTOCOL"):
    from symtrace.process import protocol

    protocol.PROTOCOL_VERSION = int(os.environ["FOREIGN_PROTOCOL"])

print("done")
