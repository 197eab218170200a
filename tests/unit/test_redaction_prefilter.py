"""The redactor's pre-filter decides the common case without the full alternation, exactly.

`_search` first asks `_could_match` (substring tests); only text that passes is searched with
the alternation. The pre-filter must never hide a match (property test against the bare
alternation) and must not send ordinary event lines through the alternation: asyncio lanes
are named "task:Task-1", which holds "sk-" inside a word.
"""

from __future__ import annotations

import random
import string

import pytest

from symtrace.model.redaction import Redactor

SECRET = "tok3n-value-1234"
FRAGMENTS = (
    "sk-", "Bearer ", "AKIA", "ghp_", "gho_", "xoxb-", "-----BEGIN RSA PRIVATE KEY-----", "=",
    "?api_key=", "&token=", "charset=utf-8", "Authorization=", "client_SECRET=", "[REDACTED]",
    "[REDACTED:X]", SECRET, "task:Task-1", "é", "_sk-", "-sk-",
)


def reference(redactor: Redactor, text: str) -> tuple[int, int] | None:
    for match in redactor._pattern.finditer(text):
        if match.group("tok") is None:
            return match.span()
    return None


@pytest.mark.parametrize("seed", range(8))
def test_the_prefilter_never_hides_a_match(seed):
    redactor = Redactor((("MY_TOKEN", SECRET),))
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + " _-\"?&;:[]é"
    for _ in range(3000):
        parts = []
        for _ in range(rng.randint(0, 6)):
            parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25))))
            if rng.random() < 0.4:
                parts.append(rng.choice(FRAGMENTS))
                parts.append("".join(rng.choice(string.ascii_letters) for _ in range(24)))
        text = "".join(parts)
        found = redactor._search(text)
        assert (found.span() if found else None) == reference(redactor, text), text


def test_an_asyncio_lane_name_is_not_a_candidate_secret():
    line = '{"id":"agent_action_0000","lane":"task:Task-1","meta":{"completed":0}}'
    redactor = Redactor()
    assert not redactor._could_match(line)
    assert redactor._could_match(line.replace("task:Task-1", "sk-" + "a" * 24))
