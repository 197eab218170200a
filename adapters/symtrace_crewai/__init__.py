"""symtrace adapter for CrewAI (`crewai==1.15.*`)."""

from __future__ import annotations

from collections.abc import Sequence

from symtrace.adapter import Hook, PatchingAdapter


class CrewAIAdapter(PatchingAdapter):
    name = "crewai"
    module = "crewai"
    distribution = "crewai"
    requires = "crewai==1.15.*"

    @staticmethod
    def supported(version: str) -> bool:
        return version.startswith("1.15.")

    def hooks(self) -> Sequence[Hook]:
        return ()
