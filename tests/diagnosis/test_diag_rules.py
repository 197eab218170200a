"""Table 10: every deterministic condition, with a positive and a negative hand-built trace."""

from __future__ import annotations

import json

import pytest

from symtrace.diagnosis import (
    DEFAULT_RULES,
    Category,
    Rule,
    Scope,
    detect_symptoms,
    diagnose,
    evidence_at,
    without,
)

from ._support import BROWSE_TOOLS, TraceBuilder

NUMBER_TASK = "How much was refunded? Return the value as a number only."
LIST_TASK = "List the orders. Return a list of objects with keys name and price only."


def fired(bundle, node_id):
    """{rule id: evidence} for the rules that matched *node_id*."""
    for node in detect_symptoms(bundle):
        if node.view.id == node_id:
            return {e.rule: e for e in node.evidence}
    raise AssertionError(f"no node {node_id}")


def tool_trace(*calls, task="Look it up.", tools=BROWSE_TOOLS):
    """One agent_action + tool_call + tool_result per (name, args, value-or-error)."""
    b = TraceBuilder(task, tools=tools)
    for name, args, outcome in calls:
        b.agent(None, calls=[(name, args)])
        if isinstance(outcome, dict) and "type" in outcome and "message" in outcome:
            b.tool(name, args, error=outcome)
        else:
            b.tool(name, args, value=outcome)
    return b


class TestC1:
    def test_unresolved_request_positive(self):
        """A final output that is another browse action is C1."""
        b = TraceBuilder()
        b.agent('{"action": "browse", "url": "https://x.org"}')
        final = b.final({"action": "browse", "url": "https://x.org"})
        ev = fired(b.bundle(), final)["c1_unresolved_request"]
        assert ev.category is Category.C1 and "browse" in ev.quote

    def test_unresolved_request_negative(self):
        """A final output that is an answer is not."""
        b = TraceBuilder()
        b.agent("Final answer: Potash Markets - Clark Street")
        final = b.final("Potash Markets - Clark Street")
        assert "c1_unresolved_request" not in fired(b.bundle(), final)

    @pytest.mark.parametrize("value", ["about 58.99 dollars", "unknown", True])
    def test_output_format_number_positive(self, value):
        b = TraceBuilder(NUMBER_TASK)
        b.agent("done")
        final = b.final(value)
        ev = fired(b.bundle(), final)["c1_output_format"]
        assert "number" in ev.note and "Return the value as a number only." in ev.note

    @pytest.mark.parametrize("value", [58.99, "58.99", "$1,058.99", 12])
    def test_output_format_number_negative(self, value):
        b = TraceBuilder(NUMBER_TASK)
        b.agent("done")
        final = b.final(value)
        assert "c1_output_format" not in fired(b.bundle(), final)

    def test_output_format_object_list(self):
        """Keys are read from the task sentence; a missing key or a non-list is C1."""
        for value, bad in (
            ([{"name": "A", "price": 1}], False),
            ([{"name": "A"}], True),
            ([{"name": "A", "price": 1, "note": "x"}], True),
            ("A costs 1", True),
        ):
            b = TraceBuilder(LIST_TASK)
            b.agent("done")
            final = b.final(value)
            assert ("c1_output_format" in fired(b.bundle(), final)) is bad, value

    def test_output_format_silent_without_stated_format(self):
        b = TraceBuilder("Who wrote Carrie?")
        b.agent("done")
        final = b.final("Stephen King, probably")
        assert "c1_output_format" not in fired(b.bundle(), final)

    def test_placeholder_positive(self):
        """A template variable in an action's arguments is C1, at the agent and the call."""
        b = TraceBuilder()
        agent = b.agent(None, calls=[("browse", {"url": "{{BASE_URL}}/orders"})])
        call, result = b.tool("browse", {"url": "{{BASE_URL}}/orders"}, value="ok")
        bundle = b.bundle()
        assert "c1_placeholder" in fired(bundle, agent)
        assert "{{BASE_URL}}" in fired(bundle, call)["c1_placeholder"].quote
        assert "c1_placeholder" not in fired(bundle, result)  # the result did not choose it

    def test_placeholder_negative(self):
        b = TraceBuilder()
        agent = b.agent(None, calls=[("browse", {"url": "https://shop.example.com/orders"})])
        call, _ = b.tool("browse", {"url": "https://shop.example.com/orders"}, value="ok")
        assert "c1_placeholder" not in fired(b.bundle(), agent)
        assert "c1_placeholder" not in fired(b.bundle(), call)

    def test_code_dunders_are_not_placeholders(self):
        b = TraceBuilder()
        b.agent(None, calls=[("python", {"code": 'if __name__ == "__main__":\n    main()'})])
        call, _ = b.tool("python", {"code": 'if __name__ == "__main__":\n    main()'}, value="")
        assert "c1_placeholder" not in fired(b.bundle(), call)

    def test_skipped_action(self):
        """A call whose every argument is empty is a skipped action."""
        b = TraceBuilder()
        b.agent(None, calls=[("search", {"query": ""})])
        call, _ = b.tool("search", {"query": "…"}, value=[])
        assert "skipped" in fired(b.bundle(), call)["c1_placeholder"].note

    def test_constraint_forbidden_site(self):
        task = {"task": "Find the price.", "constraints": ["Do not use google.com"]}
        bad = tool_trace(("browse", {"url": "https://google.com/search?q=x"}, "page"), task=task)
        good = tool_trace(("browse", {"url": "https://bing.com/search?q=x"}, "page"), task=task)
        assert "c1_constraint" in fired(bad.bundle(), "tool_call_0000")
        assert "c1_constraint" not in fired(good.bundle(), "tool_call_0000")

    def test_constraint_only_site(self):
        task = {"task": "Find it.", "constraints": ["Only use the site example.org"]}
        bad = tool_trace(("browse", {"url": "https://other.com/a"}, "page"), task=task)
        good = tool_trace(("browse", {"url": "https://www.example.org/a"}, "page"), task=task)
        assert "c1_constraint" in fired(bad.bundle(), "tool_call_0000")
        assert "c1_constraint" not in fired(good.bundle(), "tool_call_0000")

    @pytest.mark.parametrize(
        ("constraint", "answer", "violated"),
        [
            ("Answer in at most 3 words", "It is the red one over there", True),
            ("Answer in at most 3 words", "The red one", False),
            ('The answer must include "USD"', "42", True),
            ('The answer must include "USD"', "42 USD", False),
            ('The answer must not mention "estimate"', "an estimate of 42", True),
        ],
    )
    def test_constraint_on_final_output(self, constraint, answer, violated):
        b = TraceBuilder({"task": "Give the amount.", "constraints": [constraint]})
        b.agent("done")
        final = b.final(answer)
        assert ("c1_constraint" in fired(b.bundle(), final)) is violated


class TestC2:
    def test_repeated_fingerprint_positive(self):
        """The same URL (case and trailing slash folded) fetched twice is C2 at the second
        call and at its result."""
        b = tool_trace(
            ("browse", {"url": "https://en.wikipedia.org/wiki/Stephen_King"}, "page"),
            ("browse", {"url": "https://EN.wikipedia.org/wiki/Stephen_King/"}, "page"),
        )
        bundle = b.bundle()
        ev = fired(bundle, "tool_call_0001")["c2_repeated_action"]
        assert ev.event_ids == ("tool_call_0001", "tool_call_0000")
        result = fired(bundle, "tool_result_0001")["c2_repeated_action"]
        assert "identical content" in result.note
        assert "c2_repeated_action" in fired(bundle, "agent_action_0001")

    def test_repeated_url_with_other_arguments(self):
        """The tool URL alone matching a preceding node is enough."""
        b = tool_trace(
            ("browse", {"url": "https://a.org/x"}, "page"),
            ("extract_links", {"url": "https://a.org/x", "limit": 5}, []),
        )
        assert "same URL" in fired(b.bundle(), "tool_call_0001")["c2_repeated_action"].note

    def test_repeated_negative(self):
        b = tool_trace(
            ("browse", {"url": "https://a.org/x"}, "page"),
            ("browse", {"url": "https://a.org/y"}, "page"),
        )
        for node in ("agent_action_0001", "tool_call_0001", "tool_result_0001"):
            assert "c2_repeated_action" not in fired(b.bundle(), node)

    def test_retry_failed_call_unchanged(self):
        err = {"type": "Timeout", "message": "read timed out"}
        same = tool_trace(("fetch", {"id": 7}, err), ("fetch", {"id": 7}, err))
        changed = tool_trace(("fetch", {"id": 7}, err), ("fetch", {"id": 8}, "ok"))
        assert "c2_retry_without_change" in fired(same.bundle(), "tool_call_0001")
        assert "c2_retry_without_change" not in fired(changed.bundle(), "tool_call_0001")

    def test_agent_repeats_itself_without_new_evidence(self):
        b = TraceBuilder()
        b.agent("Let me think about the order history.")
        b.agent("Let me think about the  order history.")
        assert "c2_retry_without_change" in fired(b.bundle(), "agent_action_0001")

    def test_agent_repeat_after_new_evidence_is_progress(self):
        b = TraceBuilder()
        b.agent("Let me look.", calls=[("search", {"q": "a"})])
        b.tool("search", {"q": "a"}, value=["hit"])
        b.agent("Let me look.")
        assert "c2_retry_without_change" not in fired(b.bundle(), "agent_action_0001")

    def test_react_text_actions_are_fingerprinted(self):
        """CrewAI-style "Action:/Action Input:" text counts as the agent's tool call."""
        b = TraceBuilder()
        b.agent(None, calls=[("browse", {"url": "https://a.org/x"})])
        b.tool("browse", {"url": "https://a.org/x"}, value="page")
        agent = b.agent(
            'Thought: look again\nAction: browse\nAction Input: {"url": "https://a.org/x"}'
        )
        assert "c2_repeated_action" in fired(b.bundle(), agent)

    def test_internal_calls_may_repeat(self):
        """Speaker selection answering the same name twice is not a stall."""
        b = TraceBuilder()
        b.agent("coder", reason="speaker_selection")
        again = b.agent("coder", reason="speaker_selection")
        assert "c2_retry_without_change" not in fired(b.bundle(), again)

    def test_repeated_final_positive(self):
        b = TraceBuilder()
        b.agent("Final answer: 3")
        b.agent("Final answer: 3, as said")
        assert "c2_repeated_final" in fired(b.bundle(), "agent_action_0001")

    def test_repeated_final_after_new_action(self):
        b = TraceBuilder()
        b.agent("Final answer: 3", calls=[("search", {"q": "verify 3"})])
        b.tool("search", {"q": "verify 3"}, value=["3"])
        b.agent("Final answer: 3")
        assert "c2_repeated_final" not in fired(b.bundle(), "agent_action_0001")


class TestC3:
    @pytest.mark.parametrize(
        "outcome",
        [
            {"type": "ConnectionError", "message": "Failed to resolve"},
            {"status": "timeout", "error": "no answer in 30s"},
            {"status": "success", "http_status": 503},
        ],
    )
    def test_error_recorded_in_tool_result(self, outcome):
        b = tool_trace(("browse", {"url": "https://a.org"}, outcome))
        assert "c3_error_recorded" in fired(b.bundle(), "tool_result_0000")

    def test_error_recorded_in_llm_call_and_exit(self):
        b = TraceBuilder()
        agent = b.agent(status=429, error={"type": "rate_limit_exceeded", "message": "slow down"})
        final = b.final(None, exit_code=1, stdout_tail="Traceback...\nRateLimitError: slow down")
        bundle = b.bundle()
        assert "rate_limit_exceeded" in fired(bundle, agent)["c3_error_recorded"].quote
        assert "RateLimitError" in fired(bundle, final)["c3_error_recorded"].quote

    def test_error_recorded_negative(self):
        b = tool_trace(
            ("browse", {"url": "https://a.org"}, {"status": "success", "http_status": 200})
        )
        assert "c3_error_recorded" not in fired(b.bundle(), "tool_result_0000")

    def test_inaccessible_evidence(self):
        b = TraceBuilder()
        yes = b.agent("I was unable to access the admin page (403 Forbidden).")
        no = b.agent("I accessed the admin page and read the order list.")
        bundle = b.bundle()
        assert "c3_inaccessible" in fired(bundle, yes)
        assert "c3_inaccessible" not in fired(bundle, no)

    def test_continues_from_failure_is_propagated(self):
        b = tool_trace(("browse", {"url": "https://a.org"}, {"type": "SSLError", "message": "x"}))
        nxt = b.agent("Trying again.")
        ev = fired(b.bundle(), nxt)["c3_continues_from_failure"]
        assert ev.scope is Scope.PROPAGATED and ev.event_ids == (nxt, "tool_result_0000")

    def test_continues_from_success_is_not(self):
        b = tool_trace(("browse", {"url": "https://a.org"}, "page"))
        nxt = b.agent("Reading.")
        assert "c3_continues_from_failure" not in fired(b.bundle(), nxt)

    def test_final_despite_unresolved_error(self):
        b = tool_trace(("browse", {"url": "https://a.org"}, {"type": "Timeout", "message": "t"}))
        b.agent("Final answer: 5")
        final = b.final("5")
        ev = fired(b.bundle(), final)["c3_final_despite_error"]
        assert ev.scope is Scope.PROPAGATED and "tool_result_0000" in ev.event_ids

    def test_final_after_resolved_error(self):
        """A later success of the same tool resolves the error."""
        b = tool_trace(
            ("browse", {"url": "https://a.org"}, {"type": "Timeout", "message": "t"}),
            ("browse", {"url": "https://a.org/retry"}, "page"),
        )
        b.agent("Final answer: 5")
        final = b.final("5")
        assert "c3_final_despite_error" not in fired(b.bundle(), final)


class TestC4:
    @pytest.mark.parametrize(
        ("args", "word"), [({}, "no URL"), ({"url": "view-source:https://a.org"}, "view-source")]
    )
    def test_browser_url_positive(self, args, word):
        b = tool_trace(("browse", args, "page"))
        assert word in fired(b.bundle(), "tool_call_0000")["c4_browser_url"].note

    @pytest.mark.parametrize(
        ("name", "args"), [("browse", {"url": "https://a.org"}), ("calculator", {"expr": "1+1"})]
    )
    def test_browser_url_negative(self, name, args):
        b = tool_trace((name, args, "ok"))
        assert "c4_browser_url" not in fired(b.bundle(), "tool_call_0000")

    def test_structured_request_gets_html(self):
        args = {"url": "https://en.wikipedia.org/w/api.php?action=query&format=json"}
        html = "<!DOCTYPE html><html><head><title>Stephen King</title></head></html>"
        bad = tool_trace(("wiki_api", args, {"status": 200, "content": html}))
        good = tool_trace(("wiki_api", args, {"query": {"pages": {}}}))
        ev = fired(bad.bundle(), "tool_result_0000")["c4_structured_vs_html"]
        assert "<!DOCTYPE html>" in ev.quote
        assert "c4_structured_vs_html" not in fired(good.bundle(), "tool_result_0000")

    def test_completion_after_failure(self):
        bad = tool_trace(("browse", {"url": "https://a.org"}, {"type": "Timeout", "message": "t"}))
        bad.agent("Final answer: 5")
        good = tool_trace(("browse", {"url": "https://a.org"}, "page"))
        good.agent("Final answer: 5")
        ev = fired(bad.bundle(), "agent_action_0001")["c4_completion_after_failure"]
        assert ev.scope is Scope.PROPAGATED
        assert "c4_completion_after_failure" not in fired(good.bundle(), "agent_action_0001")

    def test_answer_without_tool_evidence(self):
        """Tools were offered but never used successfully."""
        b = TraceBuilder("Find the latest order.", tools=BROWSE_TOOLS)
        agent = b.agent("Final answer: order 17")
        assert "c4_no_tool_evidence" in fired(b.bundle(), agent)

    def test_answer_with_tool_evidence(self):
        b = tool_trace(("browse", {"url": "https://a.org"}, "order 17"))
        agent = b.agent("Final answer: order 17")
        assert "c4_no_tool_evidence" not in fired(b.bundle(), agent)

    def test_answer_to_a_task_that_needs_no_tools(self):
        b = TraceBuilder("What is 2 + 2?", tools=None)
        agent = b.agent("Final answer: 4")
        assert "c4_no_tool_evidence" not in fired(b.bundle(), agent)

    def test_claim_contradicts_plan(self):
        b = TraceBuilder()
        bad = b.agent("Final answer: 42. I would need to check the admin page to confirm.")
        plan = b.agent("I would browse to the admin page next.")  # a plan, not a claim
        ok = b.agent("Final answer: 42.")
        bundle = b.bundle()
        assert "c4_claim_contradicts_plan" in fired(bundle, bad)
        assert "c4_claim_contradicts_plan" not in fired(bundle, plan)
        assert "c4_claim_contradicts_plan" not in fired(bundle, ok)

    def test_plan_action_mismatch(self):
        b = TraceBuilder(tools=BROWSE_TOOLS)
        bad = b.agent(
            "I will use wiki_api to get the coordinates.",
            calls=[("browse", {"url": "https://a.org"})],
        )
        good = b.agent(
            "I will use wiki_api to get the coordinates.",
            calls=[("wiki_api", {"prop": "coordinates"})],
        )
        bundle = b.bundle()
        assert "wiki_api" in fired(bundle, bad)["c4_plan_action_mismatch"].note
        assert "c4_plan_action_mismatch" not in fired(bundle, good)


class TestRuleTable:
    def test_every_table_10_category_has_rules(self):
        assert {r.category for r in DEFAULT_RULES} == set(Category)
        assert len({r.id for r in DEFAULT_RULES}) == len(DEFAULT_RULES)

    def test_untriggered_nodes_have_no_evidence(self):
        b = tool_trace(("browse", {"url": "https://a.org"}, "page"))
        assert all(not n.evidence for n in detect_symptoms(b.bundle()))

    def test_user_rule_is_a_plain_callable(self):
        """A user rule is a function plus a table entry; the engine labels its evidence."""

        def lorem(view, ctx):
            if "lorem ipsum" in view.text.lower():
                return [evidence_at(view, view.text, "filler text instead of an answer")]
            return []

        b = TraceBuilder()
        agent = b.agent("Lorem ipsum dolor sit amet")
        rules = (*DEFAULT_RULES, Rule("c1_lorem", Category.C1, lorem, "filler text"))
        node = diagnose(b.bundle(), rules=rules).node(agent)
        assert node.confirmed == (Category.C1,)
        assert node.evidence[0].rule == "c1_lorem"
        assert node.features.c_local == 0.60  # default_rule_confidence for unlisted rules

    def test_bad_rule_tables(self):
        def bad(view, ctx):
            return ["not evidence"]

        b = TraceBuilder()
        b.agent("x")
        with pytest.raises(ValueError, match="duplicate"):
            detect_symptoms(b.bundle(), (*DEFAULT_RULES, DEFAULT_RULES[0]))
        with pytest.raises(TypeError, match="expected Evidence"):
            detect_symptoms(b.bundle(), (Rule("r", Category.C1, bad, "bad"),))

    def test_without(self):
        rules = without(DEFAULT_RULES, ["c3_error_recorded"])
        assert "c3_error_recorded" not in {r.id for r in rules}
        with pytest.raises(ValueError, match="unknown rule"):
            without(DEFAULT_RULES, ["c9_nope"])

    def test_evaluator_information_never_reaches_rules(self):
        """A task's reference answer is stripped before rules run, so it cannot be quoted."""
        task = {
            "task": "Name the shop. Return a list of objects with keys name only.",
            "reference_answer": [{"name": "Potash Markets - Clark Street"}],
            "evaluator": {"expected": "Potash Markets - Clark Street"},
        }
        b = TraceBuilder(task)
        b.agent("Final answer: a shop")
        b.final("a shop")
        out = json.dumps(diagnose(b.bundle()).to_json())
        assert "Clark Street" not in out
