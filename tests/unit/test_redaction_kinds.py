"""The credential kinds of issue 34, each replaced where it occurs; declared values first."""

from __future__ import annotations

import pytest

from symtrace.errors import RedactionError
from symtrace.model.redaction import Redactor

REDACTOR = Redactor.from_environment(env={"DECL": "declared-value-123"}, names=["DECL"])


@pytest.mark.parametrize(("text", "scrubbed"), [
    ("postgres://admin:hunter2pass@db:5432/app", "postgres://admin:[REDACTED]@db:5432/app"),
    ("http://user:pr0xy-pass@proxy:3128", "http://user:[REDACTED]@proxy:3128"),
    ("/k?X-Amz-Security-Token=FQoGZXIv&X-Amz-Signature=abc0123&X-Amz-Date=1",
     "/k?X-Amz-Security-Token=[REDACTED]&X-Amz-Signature=[REDACTED]&X-Amz-Date=1"),
    ("https://app/cb?code=4-0AX4XfWh&state=xyz", "https://app/cb?code=[REDACTED]&state=xyz"),
    ("t eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_X end",
     "t [REDACTED] end"),
    ("--password=s3cr3t-pw", "--password=[REDACTED]"),
    ("run --api-key=zzzzzzzzz now", "run --api-key=[REDACTED] now"),
    ("/data?key=declared-value-123", "/data?key=[REDACTED:DECL]"),
    ("exit code=3, mailto:bob@example.org, max_tokens=5", "exit code=3, mailto:bob@example.org, "
                                                          "max_tokens=5"),
])
def test_each_kind_is_replaced_and_ordinary_text_kept(text: str, scrubbed: str) -> None:
    assert REDACTOR.scrub_text(text) == scrubbed


def test_a_credential_named_argument_is_replaced_in_what_the_program_sends() -> None:
    request = {"tool": "login", "arguments": {"api_token": "abc123xyz", "user": "bob",
                                              "password": "pw12345678", "max_tokens": "5"}}
    assert REDACTOR.scrub(request)["arguments"] == {
        "api_token": "[REDACTED]", "user": "bob", "password": "[REDACTED]", "max_tokens": "5"}
    received = {"logprobs": {"token": "Hello"}, "secret": "not-ours"}  # a model's output: kept
    assert REDACTOR.scrub_received(received, "r") == received


def test_a_declared_value_in_a_received_credential_parameter_is_restorable() -> None:
    received = {"ok": "/data?key=declared-value-123"}
    scrubbed = REDACTOR.scrub_received(received, "r")
    assert scrubbed == {"ok": "/data?key=[REDACTED:DECL]"}
    assert REDACTOR.restore(scrubbed) == received


def test_the_command_line_names_declared_flag_values_and_refuses_others() -> None:
    argv = ["python", "p.py", "--token", "declared-value-123", "--password=declared-value-123"]
    assert REDACTOR.scrub_command(argv) == [
        "python", "p.py", "--token", "[REDACTED:DECL]", "--password=[REDACTED:DECL]"]
    assert REDACTOR.scrub_command(["p", "--max-tokens", "100"]) == ["p", "--max-tokens", "100"]
    for undeclared in (["p", "--token", "undeclared-abc"], ["p", "--password=undeclared"]):
        with pytest.raises(RedactionError, match="--secret-env"):
            REDACTOR.scrub_command(undeclared)


def test_credential_named_headers_and_otlp_header_variables_are_secrets() -> None:
    assert REDACTOR.headers({"X-Api-Token": "abc", "Content-Type": "json"},
                            ["x-api-token", "content-type"]) == {"content-type": "json"}
    env = Redactor.from_environment(env={"OTEL_EXPORTER_OTLP_HEADERS": "api-key=abcdefgh"})
    assert env.scrub_env({"OTEL_EXPORTER_OTLP_HEADERS": "api-key=abcdefgh"}) == {
        "OTEL_EXPORTER_OTLP_HEADERS": "[REDACTED]"}
