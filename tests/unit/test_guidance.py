"""Guidance placement: q̂ = q ⊕ Δ, pure, three documented placements."""

from __future__ import annotations

import pytest

from symtrace.model.intervention import apply_to_messages, apply_to_request

MESSAGES = [{"role": "system", "content": "You plan."}, {"role": "user", "content": "Go."}]


def test_user_placement_appends_a_message():
    out = apply_to_messages(MESSAGES, "Check dates.", "user")
    assert out[-1] == {"role": "user", "content": "Check dates."}
    assert MESSAGES[-1] == {"role": "user", "content": "Go."}  # not mutated


def test_system_placement_extends_the_system_prompt():
    out = apply_to_messages(MESSAGES, "Check dates.", "system")
    assert out[0]["content"] == "You plan.\n\nCheck dates."
    assert len(out) == 2
    no_system = apply_to_messages(MESSAGES[1:], "Check dates.", "system")
    assert no_system[0] == {"role": "system", "content": "Check dates."}


def test_last_placement_extends_the_last_message():
    out = apply_to_messages(MESSAGES, "Check dates.", "last")
    assert out[-1]["content"] == "Go.\n\nCheck dates."
    parts = apply_to_messages(
        [{"role": "user", "content": [{"type": "text", "text": "a"}]}], "b", "last"
    )
    assert parts[-1]["content"][-1] == {"type": "text", "text": "b"}


def test_bad_placement_and_bad_request():
    with pytest.raises(ValueError, match="placement"):
        apply_to_messages(MESSAGES, "x", "middle")
    with pytest.raises(ValueError):
        apply_to_request({"tool": "f", "arguments": {}}, "x", "user")


@pytest.mark.parametrize("placement", ["user", "system", "last"])
def test_empty_guidance_leaves_the_request_unchanged(placement):
    """A selective replay with no Δ only regenerates the anchor live (the study's RQ1)."""
    assert apply_to_messages(MESSAGES, "", placement) == MESSAGES
    with pytest.raises(ValueError, match="placement"):
        apply_to_messages(MESSAGES, "", "middle")
