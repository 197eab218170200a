"""Keep credentials off disk without changing what the program sees.

What is replaced, wherever it occurs (request bodies and URLs, tool arguments and results,
LLM responses, stdout, the manifest), before anything is hashed:

- the value of every environment variable with a credential name (`*_KEY`, `*API_KEY*`,
  `*TOKEN*`, `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, `*AUTH*`) and of every variable
  declared with `--secret-env NAME`, by `[REDACTED:NAME]` (values of 8 characters or more);
- the value of a credential-named query parameter (`api_key`, `key`, `token`,
  `access_token`, `client_secret`, `sig`, `X-Amz-Security-Token`, `X-Amz-Signature`,
  OAuth's `code`, …) in a URL or query string, by `[REDACTED]`;
- the password of a URL (`postgres://user:PASSWORD@host`, a proxy's URL) and the value of a
  credential flag (`--password=…`, `--api-key=…`), by `[REDACTED]`;
- secret-shaped text (`sk-…` keys, JWTs, bearer tokens, AWS key ids, GitHub/Slack tokens,
  private-key blocks), by `[REDACTED]`;
- in what the program sends (`scrub`: requests, a tool's arguments, the manifest), the
  string value of a credential-named key (`api_token`, `password`, `secret`, …:
  SECRET_FIELD), by `[REDACTED]`.
Declared values are replaced first, wherever they are: `?key=<declared>` is the restorable
`?key=[REDACTED:NAME]`, not an unnamed parameter. Credential headers (and credential-named
ones) are never stored; `*_HEADERS` variables (OTEL_EXPORTER_OTLP_HEADERS) are secrets.
Object keys are replaced as values are (and restored as values are on replay); two keys of
one object that would become the same key are refused (RedactionError), never merged.

Record and replay apply the same replacement, so a replayed request hashes like the
recorded one even when its key differs. What the program *receives* on replay comes from the
bundle, so a replacement there must be undone: `[REDACTED:NAME]` in a served response, tool
result or restarted argv is restored from the replaying process's own NAME (`restore`).
Unnamed secret text in what the program receives (a response carrying an `sk-…` key nobody
declared) cannot be restored: the recording is refused (RedactionError, exit 95) and nothing
of it is kept.

All patterns are one compiled alternation: one regex pass per string, and a value with no
match (the common case) is returned as is. Each distinct string is searched once: a string
found clean is remembered by its content (a conversation re-sends its history on every call,
so only the new messages of a request are searched). The memo is per Redactor, since what is
clean depends on the configured secrets, and bounded (entries and characters).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from symtrace.errors import RedactionError
from symtrace.model.canonical import JSONValue

REDACTED = "[REDACTED]"
TOKEN = re.compile(r"\[REDACTED:([A-Za-z_][A-Za-z0-9_]*)\]")

# Headers whose values are credentials. Never stored, never hashed.
SECRET_HEADERS = frozenset(
    {"authorization", "api-key", "x-api-key", "openai-api-key", "proxy-authorization", "cookie"}
)
# Environment variable names whose values are treated as secrets.
SECRET_ENV_NAME = re.compile(
    r"(?i)(api[_-]?key|token|secret|passw(or)?d|credential|auth|(^|_)key$|(^|_)pat$|"
    r"(^|_)headers$)"  # OTEL_EXPORTER_OTLP_HEADERS: "api-key=...,x-team=..."
)
# Names of object keys (a tool's arguments, a request's fields) and command-line flags whose
# string value is a credential. Narrower than the environment's names: a `token` or `key`
# field is ordinary in a model's output (logprobs, dictionaries).
SECRET_FIELD = re.compile(
    r"(?i)^(?:[a-z0-9]+[_-])*(?:api[_-]?key|api[_-]?token|access[_-]?token|auth[_-]?token|"
    r"refresh[_-]?token|id[_-]?token|bearer[_-]?token|session[_-]?token|password|passwd|"
    r"passphrase|secret|client[_-]?secret|private[_-]?key|credentials?)$"
)
_FLAG = re.compile(r"^--?(?P<name>[A-Za-z0-9_-]+)$")
_FIELD_MAX = 48  # longer strings are not key names
# Query parameter names whose values are credentials.
_QUERY_NAMES = (
    r"api[_-]?key|apikey|key|token|access[_-]?token|refresh[_-]?token|id[_-]?token|auth|"
    r"authorization|secret|client[_-]?secret|password|passwd|sig|signature|x-api-key|"
    r"x-amz-security-token|x-amz-signature|x-goog-signature|code|"
    r"[a-z_]*(?:_key|_token|_secret)"
)
_QUERY = rf"(?P<q>(?:^|(?<=[\"?&;]))(?i:{_QUERY_NAMES})=)(?P<qv>(?!\[REDACTED)[^&#;\s\"'<>\\]+)"
# The password of a URL's userinfo (`postgres://user:PASSWORD@host`, a proxy's URL).
_USERINFO = (r"(?P<u>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@\"'<>\\]*:)"
             r"(?P<uv>(?!\[REDACTED)[^\s@/\"'<>\\]+)(?=@)")
# A command-line flag with its value in one word: `--password=...`, `--api-token=...`.
_FLAG_VALUE = (r"(?P<f>(?:^|(?<=[\s\"']))--?(?i:(?:[a-z0-9]+[_-])*(?:password|passwd|"
               r"passphrase|token|secret|api[_-]?key|credentials?))=)"
               r"(?P<fv>(?!\[REDACTED)[^\s\"'&]+)")
_SHAPES = (
    r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # a JWT
    r"\bsk-[A-Za-z0-9_\-]{20,}",
    r"\bBearer\s+[A-Za-z0-9._~+/\-]{20,}=*",
    r"\bAKIA[0-9A-Z]{16}\b",
    r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    r"\bxox[abprs]-[A-Za-z0-9-]{10,}",
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----",
)
_TOKEN = r"(?P<tok>\[REDACTED(?::[A-Za-z_][A-Za-z0-9_]*)?\])"
_SHAPE = "(?P<shape>" + "|".join(_SHAPES) + ")"
MIN_SECRET_LENGTH = 8
# Literal pieces every match of _QUERY / _SHAPE contains (the fast pre-filter of _search).
_SHAPE_PREFIXES = (
    "eyJ", "sk-", "Bearer", "AKIA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "xox", "PRIVATE KEY"
)
# All of them but the private-key block start their shape at a word boundary (`\b`): an
# occurrence inside a word cannot match, and asyncio lanes ("task:Task-1") hold "sk-" in
# every event line, which would send every line through the full alternation.
_WORD_START_PREFIXES = tuple(p for p in _SHAPE_PREFIXES if p != "PRIVATE KEY")
# How the pre-filter looks for them, with the word start checked at each occurrence found:
# in a short text, `in` per prefix; in a longer one, one compiled literal each (the five gh*_
# as one class), which `re` finds ~2-3x faster than `in` (an alternation or a leading `\b`
# would lose re's literal-prefix search), while calling it costs more than `in` below
# ~100 characters. tests/unit/test_redaction_prefilter.py checks both tables against
# _WORD_START_PREFIXES.
_SHORT_TEXT = 128
_Search = Callable[..., "re.Match[str] | None"]  # a compiled pattern's `search`
_WORD_START_LITERALS = {p: re.compile(re.escape(p)).search for p in _WORD_START_PREFIXES}
# Each search comes with a character every match of it holds: a text without it (one memchr
# pass, ~20x faster than a literal search here) skips that search; ordinary prose and JSON
# lack most of them ("B", "K"), so a new text is searched a few times, not five.
_WORD_START_SEARCHES = tuple(
    (guard, re.compile(p).search)
    for guard, p in (("J", "eyJ"), ("-", "sk-"), ("B", "Bearer"), ("K", "AKIA"),
                     ("_", "gh[pousr]_"), ("x", "xox"))
)
_QUERY_HINTS = (
    "key=", "token=", "secret=", "password=", "passwd=", "sig=", "signature=", "auth=",
    "authorization=", "code=", "passphrase=", "credential=", "credentials=",
)
# The non-ASCII characters the query names' `(?i:...)` matches to an ASCII letter (`re` folds
# case one character to one: long s ~ s, Kelvin sign ~ k, dotted and dotless I ~ i), which
# `str.lower` leaves or expands otherwise ("ſ", "i̇"): folded to that letter before the hints
# are looked for, so `ſecret=` is a candidate as it is a match. tests/unit/
# test_redaction_prefilter.py derives this set from all of Unicode with `re` and checks it.
_ASCII_FOLDS = (("\u017f", "s"), ("\u212a", "k"), ("\u0130", "i"), ("\u0131", "i"))
# The clean-string memo's bounds: cleared whole when either is exceeded (a new phase of the
# run; old texts are rarely re-sent). Texts longer than CLEAN_MAX_TEXT are searched each time.
CLEAN_ENTRIES = 16_384
CLEAN_CHARS = 16_000_000
CLEAN_MAX_TEXT = 1_000_000


@dataclass(frozen=True)
class Redactor:
    """Replaces credentials (see the module doc); `restore` undoes named replacements."""

    named: tuple[tuple[str, str], ...] = ()  # (NAME, value), longest value first
    _pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _known: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _by_value: dict[str, str] = field(init=False, repr=False, compare=False)
    _clean: dict[str, None] = field(init=False, repr=False, compare=False)
    _clean_chars: list[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_value: dict[str, str] = {}
        for name, value in self.named:
            by_value.setdefault(value, name)
        values = "|".join(re.escape(v) for v in sorted(by_value, key=lambda v: (-len(v), v)))
        # A token first: already-redacted text is left as is (scrubbing is idempotent).
        parts = [_TOKEN] + ([f"(?P<known>{values})"] if values else []) + [
            _QUERY, _USERINFO, _FLAG_VALUE, _SHAPE]
        object.__setattr__(self, "_by_value", by_value)
        object.__setattr__(self, "_pattern", re.compile("|".join(parts)))
        # Declared values are replaced first, wherever they are (inside a credential query
        # parameter too: `?key=<declared>` becomes `?key=[REDACTED:NAME]`, restorable,
        # where the one alternation would have matched the parameter first, unnamed).
        object.__setattr__(self, "_known", re.compile(
            f"{_TOKEN}|(?P<known>{values})") if values else None)
        object.__setattr__(self, "_clean", {})
        object.__setattr__(self, "_clean_chars", [0])

    @classmethod
    def from_environment(
        cls,
        extra: Iterable[str] = (),
        env: Mapping[str, str] | None = None,
        *,
        names: Iterable[str] = (),
    ) -> Redactor:
        """Secrets of *env* (default os.environ): credential-named variables and *names*.

        *extra* are bare values (the in-process API's `secrets=`): they are named `SECRET_1`,
        `SECRET_2`, … in the order given, so a replay given the same list restores them.
        """
        env = os.environ if env is None else env
        declared = set(names)
        pairs = {
            (k, v)
            for k, v in env.items()
            if v
            and len(v) >= MIN_SECRET_LENGTH
            and (k in declared or (SECRET_ENV_NAME.search(k) and not k.startswith("SYMTRACE_")))
        }
        pairs.update(
            (f"SECRET_{i}", v)
            for i, v in enumerate(extra, start=1)
            if v and len(v) >= MIN_SECRET_LENGTH
        )
        return cls(tuple(sorted(pairs, key=lambda p: (-len(p[1]), p[0], p[1]))))

    @property
    def secrets(self) -> tuple[str, ...]:
        return tuple(value for _, value in self.named)

    # -- replacing -----------------------------------------------------------------------
    def _replace(self, match: re.Match[str]) -> str:
        groups = match.groupdict()
        if groups["tok"] is not None:
            return match.group(0)
        known = groups.get("known")
        if known is not None:
            name = self._by_value.get(known)
            return f"[REDACTED:{name}]" if name else REDACTED
        for prefix in ("q", "u", "f"):  # a parameter, URL or flag: its name is kept
            if groups.get(prefix) is not None:
                return groups[prefix] + REDACTED
        return REDACTED

    def _sub(self, replace: Any, text: str) -> str:
        """*text* with declared values replaced first, then every pattern."""
        known = self._known
        if known is not None:
            for value in self._by_value:
                if value in text:
                    text = known.sub(replace, text)
                    break
        return self._pattern.sub(replace, text)

    def scrub_text(self, text: str) -> str:
        return self._sub(self._replace, text)

    def _walk(self, value: JSONValue, replace: Any, fields: bool = False) -> JSONValue:
        """*value* with *replace* applied to every match in its strings; with *fields*, the
        string value of a credential-named key (SECRET_FIELD) is replaced whole."""
        if isinstance(value, str):
            if value in self._clean or not self._could_match(value):
                return value  # the alternation is costly: only text that may match runs it
            return self._sub(replace, value)
        if isinstance(value, list):
            return [self._walk(item, replace, fields) for item in value]
        if isinstance(value, tuple):
            return tuple(self._walk(item, replace, fields) for item in value)
        if isinstance(value, dict):  # keys are replaced as values are (see _rekeyed)
            out = _rekeyed(value, lambda key: self._walk(key, replace),
                           lambda item: self._walk(item, replace, fields))
            if fields:
                for key, item in out.items():
                    if (type(item) is str and item and "[REDACTED" not in item
                            and isinstance(key, str) and SECRET_FIELD.match(key)):
                        out[key] = REDACTED
            return out
        return value

    def scrub(self, value: JSONValue, strings: list[str] | None = None) -> JSONValue:
        """*value* with every credential replaced (recursively through JSON data).

        *strings*: every string of *value* (keys and values), when the caller already has
        them (`canonical.json_strings`: the exchange walks a parsed request once for both
        canonicalisation and redaction); otherwise *value* is walked here."""
        if not self._maybe(value, strings):
            return value
        return self._walk(value, self._replace, fields=True)

    def _maybe(self, value: JSONValue, strings: list[str] | None = None) -> bool:
        """True when a string of *value* (a key or a value) holds something to replace.

        Every string is searched on its own, as `_walk` replaces it; a string found clean is
        remembered, so text seen before costs a hash lookup. A value of any other type than
        JSON data is passed to `_walk` as is (it replaces inside strings only)."""
        clean = self._clean
        if strings is not None:
            unseen = [text for text in strings if text not in clean]
        else:
            unseen = []
            stack = [value]
            while stack:
                item = stack.pop()
                kind = type(item)
                if kind is str:
                    if item not in clean:
                        unseen.append(item)
                elif kind is dict:
                    stack.extend(item.values())
                    stack.extend(item.keys())
                elif kind is list or kind is tuple:
                    stack.extend(item)
                elif not (item is None or kind is bool or kind is int or kind is float):
                    return True
        if not unseen:
            return False
        for text in unseen:  # a credential-named key (never remembered clean: see scrub)
            if len(text) <= _FIELD_MAX and SECRET_FIELD.match(text):
                return True
        # One search over the new strings joined by '"', which every pattern treats like the
        # end or start of a string (a match inside one string is still found; one spanning
        # two is a false alarm, settled string by string below).
        if len(unseen) == 1 or self._search('"'.join(unseen)) is not None:
            for text in unseen:
                if self._search(text) is not None:
                    return True
        if len(unseen) > 4:  # a token-by-token stream's chunks: a hundred a call
            self._remember_all_clean(unseen)
        else:  # a conversation's call brings a few: the plain loop costs less
            for text in unseen:
                self._remember_clean(text)
        return False

    def _remember_all_clean(self, texts: list[str]) -> None:
        """`_remember_clean` of each of *texts*, at once when none of them would clear the
        memo or be left out."""
        total = sum(map(len, texts))
        clean, counter = self._clean, self._clean_chars
        if (total <= CLEAN_MAX_TEXT and counter[0] + total <= CLEAN_CHARS
                and len(clean) + len(texts) <= CLEAN_ENTRIES):
            clean.update(dict.fromkeys(texts))
            counter[0] += total
            return
        for text in texts:
            self._remember_clean(text)

    def _remember_clean(self, text: str) -> None:
        size = len(text)
        if size > CLEAN_MAX_TEXT:
            return
        counter = self._clean_chars
        if len(self._clean) >= CLEAN_ENTRIES or counter[0] + size > CLEAN_CHARS:
            self._clean.clear()
            counter[0] = 0
        self._clean[text] = None
        counter[0] += size

    def _search(self, text: str) -> re.Match[str] | None:
        """The first match that is not an already-redacted token.

        Substring tests (C speed) first: the alternation is only run on text that contains
        a configured value, a shape's prefix or a credential-like `name=`."""
        if not self._could_match(text):
            return None
        for match in self._pattern.finditer(text):
            if match.group("tok") is None:
                return match
        return None

    def _could_match(self, text: str) -> bool:
        # plain loops, C substring tests first: this runs on every new string of every call
        for value in self._by_value:
            if value in text:
                return True
        if "V" in text and "PRIVATE KEY" in text:  # a memchr pass first (see below)
            return True
        if len(text) < _SHORT_TEXT:
            for prefix in _WORD_START_PREFIXES:
                if prefix in text and _at_word_start(text, _WORD_START_LITERALS[prefix],
                                                     text.find(prefix)):
                    return True
        else:
            for guard, search in _WORD_START_SEARCHES:
                if guard not in text:
                    continue
                match = search(text)
                if match is not None and _at_word_start(text, search, match.start()):
                    return True
        if "://" in text and "@" in text:  # a URL that may carry a password
            return True
        if "=" not in text:
            return False
        if not text.isascii():  # a flag test: only non-ASCII text looks for the four
            for char, letter in _ASCII_FOLDS:  # C substring tests (str.translate is slower)
                if char in text:
                    text = text.replace(char, letter)
        lowered = text.lower()
        return any(name in lowered for name in _QUERY_HINTS)

    def scrub_bytes(self, data: bytes) -> bytes:
        text = data.decode("utf-8", "surrogateescape")
        return self.scrub_text(text).encode("utf-8", "surrogateescape")

    def scrub_received(
        self, value: JSONValue, where: str, strings: list[str] | None = None
    ) -> JSONValue:
        """What the program received (a response, a tool result): named secrets become
        restorable tokens; any other secret would change it on replay, so it is refused.
        *strings*: every string of *value*, when the caller has them (see `scrub`)."""
        if not self._maybe(value, strings):
            return value
        unnamed: list[str] = []

        def replace(match: re.Match[str]) -> str:
            out = self._replace(match)
            if out != match.group(0) and out.endswith(REDACTED):
                unnamed.append(_kind(match))
            return out

        scrubbed = self._walk(value, replace)
        if unnamed:
            raise RedactionError(
                f"refusing to record {where}: what the program received contains a credential "
                "that is not the value of a declared or credential-named environment variable, "
                "so it could not be given back to the program on replay; declare it with "
                "--secret-env NAME"
            )
        return scrubbed

    def scrub_command(self, argv: list[str]) -> list[str]:
        """A command line as stored: like any received value (`scrub_received`), and the word
        after a credential flag given apart (`--token VALUE`, `--password VALUE`) is a
        credential too: declared, it becomes its restorable token; else it is refused."""
        words = list(argv)
        for index in range(1, len(words)):
            flag = _FLAG.match(words[index - 1])
            name = flag.group("name").replace("-", "_") if flag else ""
            if name and (SECRET_FIELD.match(name) or name.lower() == "token"):
                word = words[index]
                named = self._known.sub(self._replace, word) if self._known else word
                if "[REDACTED" not in named and not word.startswith("-"):
                    raise RedactionError(
                        f"refusing to record the command line: the value of {words[index - 1]} "
                        "is a credential that is not the value of a declared or "
                        "credential-named environment variable, so it could not be given "
                        "back to the program on replay; declare it with --secret-env NAME")
                words[index] = named
        result = self.scrub_received(words, "the command line")
        assert isinstance(result, list)
        return result

    def restore(self, value: JSONValue, env: Mapping[str, str] | None = None) -> JSONValue:
        """Undo named replacements with this process's own values (what replay serves):
        the value this redactor holds for NAME, else NAME in *env* (default os.environ)."""
        env = {**(os.environ if env is None else env), **dict(self.named)}
        return _restored(value, env)

    # -- headers, environment, last check ------------------------------------------------
    def headers(self, headers: Mapping[str, str], keep: Iterable[str]) -> dict[str, str]:
        """The kept subset of *headers*, lowercased, with credentials removed."""
        wanted = {k.lower() for k in keep}
        out = {}
        for key, value in headers.items():
            name = key.lower()
            if name in wanted and name not in SECRET_HEADERS and not SECRET_FIELD.match(
                    name.replace("-", "_")):
                out[name] = self.scrub_text(value)
        return dict(sorted(out.items()))

    def scrub_env(self, env: Mapping[str, str]) -> dict[str, str]:
        """Environment subset safe to store: secret-named variables get a placeholder."""
        declared = {name for name, _ in self.named}
        return {
            k: (REDACTED if SECRET_ENV_NAME.search(k) or k in declared else self.scrub_text(v))
            for k, v in sorted(env.items())
        }

    def check(self, data: bytes, where: str) -> None:
        """Last line of defence before bytes reach disk: one search for anything left."""
        match = self._search(data.decode("utf-8", "replace"))
        if match is not None:
            raise RedactionError(
                f"refusing to write {where}: it still contains a credential "
                f"({_kind(match)}: {match.group(0)[:12]!r}); nothing was written"
            )


def _restored(value: JSONValue, env: Mapping[str, str]) -> JSONValue:
    if isinstance(value, str):
        if "[REDACTED:" not in value:
            return value
        return TOKEN.sub(lambda m: env.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [_restored(item, env) for item in value]
    if isinstance(value, tuple):
        return tuple(_restored(item, env) for item in value)
    if isinstance(value, dict):  # a key was redacted as a value is: restored as one
        return _rekeyed(value, lambda key: _restored(key, env), lambda item: _restored(item, env))
    return value


def _rekeyed(value: dict[Any, Any], key_of: Any, item_of: Any) -> dict[Any, Any]:
    """*value* with each string key passed through *key_of* and each item through *item_of*,
    in its order. Two keys that become one are refused, never merged (one would be lost)."""
    out: dict[Any, Any] = {}
    for position, (key, item) in enumerate(value.items()):
        new = key_of(key) if isinstance(key, str) else key
        if new in out:  # neither key is shown: one side of the two holds the secret
            first = list(out).index(new)
            raise RedactionError(
                f"refusing an object whose keys {first} and {position} become the same key "
                "once credentials are redacted (or restored): it would merge two entries"
            )
        out[new] = item_of(item)
    return out


def _at_word_start(text: str, search: _Search, at: int) -> bool:
    """True when *search* (a compiled pattern's `search`) matches *text* at *at* or later
    where a word starts (where `\\b` before it would match: re's word characters are
    Unicode-aware, as `str.isalnum` is)."""
    while True:
        before = text[at - 1] if at else ""
        if not (before.isalnum() or before == "_"):
            return True
        match = search(text, at + 1)
        if match is None:
            return False
        at = match.start()


def _kind(match: re.Match[str]) -> str:
    if match.groupdict().get("known") is not None:
        return "the value of a configured secret"
    if match.group("q") is not None:
        return "a credential query parameter"
    return "a secret-shaped value"


__all__ = ["REDACTED", "SECRET_ENV_NAME", "SECRET_HEADERS", "Redactor"]
