"""Canonicalisation is the single definition of "the same request"; digests are pinned."""

from __future__ import annotations

import math
import re

import pytest

from symtrace.errors import CanonicalizationError
from symtrace.model.canonical import (
    RULE_IDS,
    canonical_bytes,
    canonical_http_request,
    canonical_tool_call,
)
from symtrace.model.hashing import digest

REQUEST = {
    "model": "m",
    "temperature": 0.0,
    "messages": [
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": "42"},
    ],
}


class TestCanonicalBytes:
    def test_sorts_keys_and_drops_whitespace(self):
        assert (
            canonical_bytes({"b": 1, "a": [2, {"d": 1, "c": 2}]})
            == b'{"a":[2,{"c":2,"d":1}],"b":1}'
        )

    def test_integral_floats_equal_integers(self):
        assert canonical_bytes({"t": 1.0}) == canonical_bytes({"t": 1})
        assert canonical_bytes({"t": 0.5}) == b'{"t":0.5}'

    def test_refuses_values_without_a_json_form(self):
        with pytest.raises(CanonicalizationError) as info:
            canonical_bytes({"a": [1, object()]})
        assert info.value.path == "/a/1"
        with pytest.raises(CanonicalizationError):
            canonical_bytes({"x": math.nan})
        with pytest.raises(CanonicalizationError):
            canonical_bytes({1: "non-string key"})


class TestRequests:
    def test_tool_call_ids_become_ordinals(self):
        def normalise_tool_call_ids(body):
            return canonical_http_request("POST", "/v1/chat/completions", "", body)["body"]

        body = normalise_tool_call_ids(REQUEST)
        assert body["messages"][1]["tool_calls"][0]["id"] == "call#0"
        assert body["messages"][2]["tool_call_id"] == "call#0"
        other = {
            **REQUEST,
            "messages": [
                REQUEST["messages"][0],
                {
                    **REQUEST["messages"][1],
                    "tool_calls": [{**REQUEST["messages"][1]["tool_calls"][0], "id": "call_zzz"}],
                },
                {**REQUEST["messages"][2], "tool_call_id": "call_zzz"},
            ],
        }
        assert digest(normalise_tool_call_ids(other)) == digest(body)

    def test_host_and_headers_are_not_part_of_identity(self):
        a = canonical_http_request("post", "/v1/chat/completions", "", REQUEST)
        assert set(a) == {"method", "path", "query", "body"}
        assert a["method"] == "POST"

    def test_every_output_shaping_field_is_kept(self):
        base = canonical_http_request("POST", "/v1/chat/completions", "", REQUEST)
        for field, value in [
            ("tools", []),
            ("tool_choice", "auto"),
            ("top_p", 0.5),
            ("response_format", {"type": "json_object"}),
            ("stream", True),
            ("seed", 3),
            ("model", "other"),
        ]:
            changed = canonical_http_request(
                "POST", "/v1/chat/completions", "", {**REQUEST, field: value}
            )
            assert digest(changed) != digest(base), field

    def test_golden_digests(self):
        """If these change, canonicalisation changed: bump FORMAT_VERSION with them."""
        http = canonical_http_request("POST", "/v1/chat/completions", "", REQUEST)
        assert digest(http) == GOLDEN_HTTP
        assert digest(canonical_tool_call("lookup", {"city": "Lisbon", "n": 2.0})) == GOLDEN_TOOL
        assert RULE_IDS == (
            "sort-keys",
            "http-drop-headers",
            "http-drop-origin",
            "tool-call-ids-to-ordinals",
            "floats-integral",
        )

    def test_digest_shape(self):
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest({}))


GOLDEN_HTTP = "sha256:de713da83c13963050f063bb5068c1ef177c24777e462b220bcd55cf4bd55869"
GOLDEN_TOOL = "sha256:183d2137e2d2f9a5a5abeed664d4604c9ba8d471cb22be058c967ddb8ebd7bfb"
