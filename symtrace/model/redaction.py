"""Keep secrets off disk: scrub known secret values, drop credential headers, refuse the rest.

Redaction runs before hashing as well as before writing, so a recorded digest never depends
on a key, and the same scrubbing applied to a replayed request gives the same digest. After
scrubbing, every byte about to be written is scanned for secret-shaped text; a hit raises
RedactionError and the record is not written: a replay bundle is shared, a leaked key is not
recoverable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from symtrace.errors import RedactionError
from symtrace.model.canonical import JSONValue

REDACTED = "[REDACTED]"

# Headers whose values are credentials. Never stored, never hashed.
SECRET_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "openai-api-key", "proxy-authorization", "cookie"}
)
# Environment variable names whose values are treated as secrets.
SECRET_ENV_NAME = re.compile(r"(?i)(api[_-]?key|token|secret|passw(or)?d|credential|auth)")
# Text shapes that are almost always credentials.
SECRET_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("openai-style key", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}")),
    ("bearer token", re.compile(r"\bBearer\s+[A-Za-z0-9._~+/\-]{20,}")),
    ("aws access key id", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("github token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}")),
    ("slack token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)
MIN_SECRET_LENGTH = 8


@dataclass(frozen=True, slots=True)
class Redactor:
    """Scrubs configured secret values; scans output for secret shapes."""

    secrets: tuple[str, ...] = ()

    @classmethod
    def from_environment(
        cls, extra: Iterable[str] = (), env: Mapping[str, str] | None = None
    ) -> Redactor:
        env = os.environ if env is None else env
        values = {v for k, v in env.items() if SECRET_ENV_NAME.search(k) and v}
        values.update(v for v in extra if v)
        kept = sorted(
            (v for v in values if len(v) >= MIN_SECRET_LENGTH), key=lambda v: (-len(v), v)
        )
        return cls(tuple(kept))

    def scrub(self, value: JSONValue) -> JSONValue:
        """Replace every configured secret value inside strings (recursively)."""
        if not self.secrets:
            return value
        if isinstance(value, str):
            for secret in self.secrets:
                if secret in value:
                    value = value.replace(secret, REDACTED)
            return value
        if isinstance(value, list):
            return [self.scrub(item) for item in value]
        if isinstance(value, dict):
            return {key: self.scrub(item) for key, item in value.items()}
        return value

    def headers(self, headers: Mapping[str, str], keep: Iterable[str]) -> dict[str, str]:
        """The kept subset of *headers*, lowercased, with credentials removed."""
        wanted = {k.lower() for k in keep}
        out = {}
        for key, value in headers.items():
            name = key.lower()
            if name in wanted and name not in SECRET_HEADERS:
                out[name] = self.scrub(value)
        return dict(sorted(out.items()))

    def check(self, data: bytes, where: str) -> None:
        """Raise RedactionError if *data* still contains a secret value or shape."""
        text = data.decode("utf-8", "replace")
        for secret in self.secrets:
            if secret in text:
                raise RedactionError(
                    f"refusing to write {where}: it contains the value of a configured secret"
                )
        for label, pattern in SECRET_SHAPES:
            if pattern.search(text):
                raise RedactionError(
                    f"refusing to write {where}: it contains a secret-shaped value ({label}); "
                    "scrub it in the program or pass it with --secret so it is redacted"
                )

    def scrub_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment subset safe to store: secret-named variables get a placeholder."""
        return {
            k: (REDACTED if SECRET_ENV_NAME.search(k) else self.scrub(v))
            for k, v in sorted(env.items())
        }
