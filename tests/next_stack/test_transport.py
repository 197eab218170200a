"""The transport proofs on the second stack: openai 3 and anthropic 2 over httpx2.

The same tests as tests/transport (which run in the main environment on openai 2 over
httpx); here every openai request crosses the httpx2 seam, and the assertions on
`meta.transport` say so.
"""

from tests.transport.test_egress_e2e import (  # noqa: F401
    plain,
    service,
    stub,
    test_aliases_of_the_recorded_endpoint_are_blocked,
    test_an_llm_request_around_the_seams_fails_the_recording,
)
from tests.transport.test_outcome_e2e import (  # noqa: F401
    test_uncaptured_entropy_in_stdout_is_a_divergence,
)
from tests.transport.test_programs_e2e import test_record_replay_and_diverge  # noqa: F401
from tests.transport.test_seams import (  # noqa: F401
    test_a_changed_request_diverges_at_the_seam,
    test_a_response_has_the_attributes_it_has_without_symtrace,
    test_elapsed_is_the_live_calls_when_recorded_and_the_replays_own_when_replayed,
    test_seam_records_and_replays_offline,
    test_the_openai_sdks_raw_response_elapsed_recorded_and_replayed,
)
