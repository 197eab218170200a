"""Token counting without the network: the tiktoken side channel of autogen-ext.

`OpenAIChatCompletionClient.count_tokens` (and `remaining_tokens`, which calls it) counts with
tiktoken, and tiktoken downloads its BPE file (`o200k_base` for gpt-4o*, `cl100k_base` for an
unknown model name, ...) from openaipublic.blob.core.windows.net on first use, caching it in
`TIKTOKEN_CACHE_DIR` (default `$TMPDIR/data-gym-cache`). Offline and uncached, it raises
`requests.ConnectionError`. Counts steer requests (`TokenLimitedChatCompletionContext` drops
messages until the count fits), so they are part of the run's environment c.

Under symtrace every count is a recorded boundary (`count_tokens`): replay serves the recorded
count and never needs tiktoken or its files. A live count (recording, or the live suffix of a
selective replay) is exact when tiktoken can load the encoding; when its file is neither cached
nor downloadable, it falls back to `estimate_tokens` (deterministic, ~4 characters a token) and
logs a warning once. Offline CI that wants exact counts seeds the cache from a file it has:
`seed_tiktoken_cache("o200k_base", "o200k_base.tiktoken")`, or `TIKTOKEN_CACHE_DIR` pointing at
a directory kept between runs.

This module imports neither autogen nor tiktoken at import time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from symtrace.errors import SymtraceError

log = logging.getLogger(__name__)

_BASE = "https://openaipublic.blob.core.windows.net/encodings/"
# Name -> (url, sha256), as in tiktoken_ext/openai_public.py (tiktoken 0.14). The cache key is
# sha1(url), the file is checked against sha256 before use: ours and tiktoken's check agree.
ENCODING_FILES: dict[str, tuple[str, str]] = {
    "r50k_base": (
        _BASE + "r50k_base.tiktoken",
        "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    ),
    "p50k_base": (
        _BASE + "p50k_base.tiktoken",
        "94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    ),
    "cl100k_base": (
        _BASE + "cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        _BASE + "o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
FALLBACK_ENCODING = "cl100k_base"  # what autogen-ext uses for a model tiktoken does not know
_WORD = re.compile(r"\w+|[^\w\s]", re.UNICODE)
_warned: set[str] = set()


class TiktokenCacheError(SymtraceError, ValueError):
    """An encoding file given to seed the tiktoken cache is unknown, missing or corrupt."""


def encoding_for_model(model: str) -> str:
    """The encoding autogen-ext's `count_tokens_openai` uses for *model*."""
    import tiktoken.model

    try:
        return tiktoken.model.encoding_name_for_model(model)
    except KeyError:
        return FALLBACK_ENCODING


def cache_dir() -> Path | None:
    """tiktoken's cache directory, or None when caching is disabled (TIKTOKEN_CACHE_DIR="")."""
    for name in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if name in os.environ:
            return Path(os.environ[name]) if os.environ[name] else None
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def _cache_path(encoding: str) -> Path | None:
    directory = cache_dir()
    if directory is None or encoding not in ENCODING_FILES:
        return None
    url = ENCODING_FILES[encoding][0]  # tiktoken keys its cache by sha1(url)
    return directory / hashlib.sha1(url.encode()).hexdigest()


def encoding_cached(encoding: str) -> bool:
    """True when tiktoken can load *encoding* without the network."""
    import tiktoken.registry

    if encoding in getattr(tiktoken.registry, "ENCODINGS", {}):
        return True
    path = _cache_path(encoding)
    if path is None or not path.is_file():
        return False
    return hashlib.sha256(path.read_bytes()).hexdigest() == ENCODING_FILES[encoding][1]


def seed_tiktoken_cache(encoding: str, source: str | os.PathLike[str]) -> Path:
    """Put a local copy of *encoding*'s BPE file where tiktoken looks for it; return the path.

    The file is checked against the digest tiktoken expects, so a wrong file fails here
    (TiktokenCacheError) instead of as a download attempt later.
    """
    if encoding not in ENCODING_FILES:
        raise TiktokenCacheError(
            f"unknown encoding {encoding!r} (known: {', '.join(sorted(ENCODING_FILES))})"
        )
    target = _cache_path(encoding)
    if target is None:
        raise TiktokenCacheError("tiktoken caching is disabled (TIKTOKEN_CACHE_DIR is empty)")
    try:
        data = Path(source).read_bytes()
    except OSError as exc:
        raise TiktokenCacheError(f"cannot read {source}: {exc.strerror or exc}") from exc
    if hashlib.sha256(data).hexdigest() != ENCODING_FILES[encoding][1]:
        raise TiktokenCacheError(f"{source} is not the {encoding} file tiktoken expects")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".symtrace-partial")
    shutil.copyfile(source, partial)
    os.replace(partial, target)
    return target


def estimate_tokens(messages: Sequence[Any], tools: Sequence[Any]) -> int:
    """A deterministic stand-in for tiktoken: words and punctuation marks, plus framing."""
    total = 3
    for message in messages:
        total += 3 + len(_WORD.findall(_text(message)))
    for tool in tools:
        total += 12 + len(_WORD.findall(_text(tool)))
    return total


def count_live(
    original: Callable[..., int], client: Any, messages: Sequence[Any], tools: Sequence[Any]
) -> int:
    """autogen-ext's own count when tiktoken can have the encoding, else the estimate."""
    encoding = encoding_for_model(client._create_args["model"])
    try:
        return original(client, messages, tools=tools)
    except OSError as exc:  # requests.ConnectionError: the file is not cached and no network
        if encoding_cached(encoding):
            raise
        if encoding not in _warned:
            _warned.add(encoding)
            log.warning(
                "tiktoken cannot load %s offline (%s); counting tokens with symtrace's "
                "estimate instead. Seed the cache for exact counts: "
                "symtrace_autogen_agentchat.seed_tiktoken_cache(%r, PATH)",
                encoding, type(exc).__name__, encoding,
            )
        return estimate_tokens(messages, tools)


def request_digest(messages: Sequence[Any], tools: Sequence[Any]) -> dict[str, Any]:
    """What a count depends on, compactly: a digest of the messages and the tool names."""
    data = orjson.dumps([_dump(m) for m in messages], option=orjson.OPT_SORT_KEYS)
    return {
        "messages": len(messages),
        "messages_sha256": hashlib.sha256(data).hexdigest(),
        "tools": [_tool_name(t) for t in tools],
    }


def _dump(value: Any) -> Any:
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value


def _text(value: Any) -> str:
    dumped = _dump(value)
    if hasattr(value, "schema") and not isinstance(dumped, dict | list | str):
        dumped = value.schema
    return orjson.dumps(dumped, option=orjson.OPT_SORT_KEYS, default=str).decode()


def _tool_name(tool: Any) -> str:
    if isinstance(tool, dict):
        return str(tool.get("name"))
    return str(getattr(tool, "name", type(tool).__name__))
