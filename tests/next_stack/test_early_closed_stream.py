"""A stream stopped early replays, on the second stack (openai 3, anthropic 2 over httpx2).

The same tests as tests/transport/test_early_closed_stream.py (openai 2 over httpx)."""

from tests.transport.test_early_closed_stream import (  # noqa: F401
    stub,
    test_a_stream_stopped_early_replays_strictly,
)
