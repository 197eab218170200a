"""The redactor's pre-filter decides the common case without the full alternation, exactly.

`_search` first asks `_could_match` (substring tests); only text that passes is searched with
the alternation. The pre-filter must never hide a match (property test against the bare
alternation) and must not send ordinary event lines through the alternation: asyncio lanes
are named "task:Task-1", which holds "sk-" inside a word.
"""

from __future__ import annotations

import random
import re
import string

import pytest

from symtrace.errors import RedactionError
from symtrace.model import redaction
from symtrace.model.redaction import Redactor

SECRET = "tok3n-value-1234"
FRAGMENTS = (
    "sk-", "Bearer ", "AKIA", "ghp_", "gho_", "xoxb-", "-----BEGIN RSA PRIVATE KEY-----", "=",
    "?api_key=", "&token=", "charset=utf-8", "Authorization=", "client_SECRET=", "[REDACTED]",
    "[REDACTED:X]", SECRET, "task:Task-1", "é", "_sk-", "-sk-", "eyJ", "eyJhbGciOiJIUzI1.eyJ",
    "://", "@", "postgres://u:", "?code=", "--password=", "X-Amz-Signature=",
)


def reference(redactor: Redactor, text: str) -> tuple[int, int] | None:
    for match in redactor._pattern.finditer(text):
        if match.group("tok") is None:
            return match.span()
    return None


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("pieces", [6, 24], ids=["short", "long"])  # both sides of _SHORT_TEXT
def test_the_prefilter_never_hides_a_match(seed, pieces):
    redactor = Redactor((("MY_TOKEN", SECRET),))
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + " _-\"?&;:[]é"
    lengths = []
    for _ in range(3000 if pieces == 6 else 600):
        parts = []
        for _ in range(rng.randint(0, pieces)):
            parts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 25))))
            if rng.random() < 0.4:
                parts.append(rng.choice(FRAGMENTS))
                parts.append("".join(rng.choice(string.ascii_letters) for _ in range(24)))
        text = "".join(parts)
        lengths.append(len(text))
        found = redactor._search(text)
        assert (found.span() if found else None) == reference(redactor, text), text
    long = sum(n >= redaction._SHORT_TEXT for n in lengths)
    assert long > len(lengths) // 2 if pieces == 24 else len(lengths) - long > len(lengths) // 2


def test_the_prefilters_prefix_searches_are_the_word_start_prefixes():
    """Short texts look for each prefix, longer ones run the compiled searches: both must
    find exactly `_WORD_START_PREFIXES` (a prefix dropped from one would hide its secrets)."""
    prefixes = set(redaction._WORD_START_PREFIXES)
    assert list(redaction._WORD_START_LITERALS) == list(redaction._WORD_START_PREFIXES)
    for prefix, search in redaction._WORD_START_LITERALS.items():
        assert search(f"x {prefix}").span() == (2, 2 + len(prefix))
    # every string of the prefixes' lengths over their characters, found by the searches
    chars = sorted(set("".join(prefixes)) | set(string.ascii_lowercase))
    found = set()
    for guard, search in redaction._WORD_START_SEARCHES:
        for prefix in prefixes:
            match = search(prefix)
            if match is not None:  # a text without the guard is never searched
                assert guard in match.group(), (guard, prefix)
        for prefix in prefixes:
            match = search(prefix)
            if match is not None and match.span() == (0, len(prefix)):
                found.add(prefix)
        for a in chars:  # what a class could match besides: gh?_
            for candidate in (f"gh{a}_", f"sk{a}", f"xo{a}"):
                match = search(candidate)
                if match is not None:
                    assert match.group() in prefixes, candidate
    assert found == prefixes


def test_an_asyncio_lane_name_is_not_a_candidate_secret():
    line = '{"id":"agent_action_0000","lane":"task:Task-1","meta":{"completed":0}}'
    redactor = Redactor()
    assert not redactor._could_match(line)
    assert redactor._could_match(line.replace("task:Task-1", "sk-" + "a" * 24))


# -- case folding: the pre-filter folds exactly as the pattern's (?i:) does ------------------------
QUERY_NAMES = ("api_key", "apikey", "key", "token", "access_token", "refresh-token", "id_token",
               "auth", "authorization", "secret", "client_secret", "password", "passwd", "sig",
               "signature", "x-api-key", "my_key", "session_token", "app_secret")


def ascii_letter_folds() -> dict[str, str]:
    """Every non-ASCII character `re` matches to an ASCII letter case-insensitively (found by
    searching all of Unicode, with the running Python's own `re`), and that letter."""
    everything = "".join(map(chr, range(0x80, 0x110000)))
    folds = {}
    for char in set(re.findall("(?i)[a-z]", everything)):
        (letter,) = [a for a in string.ascii_lowercase if re.fullmatch(f"(?i:{a})", char)]
        folds[char] = letter
    return folds


def test_every_case_fold_of_a_credential_name_is_caught_by_the_prefilter():
    """`ſecret=…` (long s), `Key=…` (Kelvin sign), `İd_token`/`ıd_token` match the pattern's
    case-insensitive names; the pre-filter must let each through, at every position of every
    name, or the value is stored as is."""
    folds = ascii_letter_folds()
    assert {"\u017f", "\u212a", "\u0130", "\u0131"} <= set(folds)  # the known ones, at least
    redactor = Redactor()
    tried = 0
    for name in QUERY_NAMES:
        for at, letter in enumerate(name):
            for char in (c for c, a in folds.items() if a == letter.lower()):
                text = f"https://h/v1?{name[:at]}{char}{name[at + 1:]}=abc123xyz&x=1"
                expected = reference(redactor, text)
                assert expected is not None, text  # the pattern matches it ...
                found = redactor._search(text)
                assert found is not None and found.span() == expected, text  # ... so must we
                assert "abc123xyz" not in str(redactor.scrub({"url": text}))
                with pytest.raises(RedactionError):
                    redactor.check(text.encode(), "the test")
                tried += 1
    assert tried >= 40  # every s, k and i of every name
