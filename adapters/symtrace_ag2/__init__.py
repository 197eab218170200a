"""symtrace adapter for classic AG2 (module `autogen`, PyPI `ag2>=0.13.3,<1`)."""

from __future__ import annotations

from collections.abc import Sequence

from symtrace.adapter import Hook, PatchingAdapter


class AG2Adapter(PatchingAdapter):
    name = "ag2"
    module = "autogen"
    distribution = "ag2"
    requires = "ag2>=0.13.3,<1"

    @staticmethod
    def supported(version: str) -> bool:
        major, minor = (int(x) for x in version.split(".")[:2])
        return (0, 13) <= (major, minor) < (1, 0)

    def hooks(self) -> Sequence[Hook]:
        return ()
