"""The anchor-retry proofs on the second stack: openai 3 and anthropic 2 over httpx2.

The same tests as tests/transport/test_anchor_retry.py (openai 2 over httpx in the main
environment); here every SDK request crosses the httpx2 seam.
"""

import openai

from tests.transport.test_anchor_retry import (  # noqa: F401
    droppable_streams,
    instant_sdk_retries,
    stub,
    test_anthropic_retries_of_the_anchor_carry_the_guidance,
    test_openai_async_retries_of_the_anchor_carry_the_guidance,
    test_openai_sync_retries_of_the_anchor_carry_the_guidance,
    test_when_no_guided_attempt_succeeds_the_replay_fails_typed,
)


def test_this_stack_is_openai_3():
    assert openai.__version__.startswith("3.")
