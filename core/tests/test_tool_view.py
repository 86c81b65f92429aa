"""The progressive tool view: stubs first, a full schema once the model hints at a tool (`$name`)
or calls it, derived from the history so a resumed session keeps it; `full` sends every schema."""

from __future__ import annotations

import types

import crab
from crab._builtin.tool_view import STUB_PARAMETERS, ToolView, expanded_tools, hinted, stub, tool_specs
from crab._contracts.messages import AssistantMessage, ToolCall, ToolResultMessage, UserMessage
from crab._loop.compaction import CONTINUED, anchor_payload, carried
from crab._loop.turn import SCHEMAS_SENT, STUB_CALL_NOTE
from crab.testing import ScriptedProvider


def plugin(*tools: crab.Tool) -> object:
    return types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: list(tools)))


@crab.tool
def alpha(path: str, limit: int = 10) -> str:
    """Read the first lines of a file.

    A longer explanation the stub leaves out.
    """
    return f"alpha {path} {limit}"


@crab.tool
def beta(pattern: str) -> str:
    """Search for a pattern."""
    return f"beta {pattern}"


@crab.tool
def gamma(count: int) -> str:
    """Count things."""
    return f"gamma {count}"


TOOLS = {"p": plugin(alpha, beta, gamma)}


def full(request) -> set[str]:
    return {s.name for s in request.tools if s.parameters != STUB_PARAMETERS}


def test_the_first_request_lists_every_tool_as_a_one_line_stub(crab_agent):
    h = crab_agent([[{"text": "hi"}]], plugins=TOOLS)
    h.run("hello")
    specs = {s.name: s for s in h.requests[0].tools}
    assert set(specs) == {"alpha", "beta", "gamma"}
    assert all(s.parameters == STUB_PARAMETERS for s in specs.values())
    assert specs["alpha"].description == "Read the first lines of a file."


def test_a_stub_line_is_the_first_sentence_of_a_long_first_paragraph() -> None:
    long = crab.Tool(
        "t",
        "Find files by name. A pattern without a slash matches names at any depth;\n" + "x " * 80,
        {},
        lambda a, c: "",
    )
    assert stub(long).description == "Find files by name."
    assert len(stub(crab.Tool("u", "y" * 500, {}, lambda a, c: "")).description) == 120


def test_a_hint_expands_the_tool_and_a_hint_only_reply_gets_the_next_step(crab_agent):
    h = crab_agent(
        [
            [{"text": "I will need $alpha."}],
            [{"tool": "alpha", "args": {"path": "a.txt"}}],
            [{"text": "done"}],
        ],
        plugins=TOOLS,
    )
    outcome = h.run("read a.txt")
    assert outcome.stop == "end" and outcome.text == "done"
    assert full(h.requests[0]) == set()
    assert full(h.requests[1]) == {"alpha"}
    schema = next(s for s in h.requests[1].tools if s.name == "alpha")
    assert schema == alpha.spec()
    notes = [m for m in h.requests[1].messages if isinstance(m, UserMessage) and m.content.startswith("[crab]")]
    assert [n.content for n in notes] == [SCHEMAS_SENT.format(names="alpha")]
    assert full(h.requests[2]) == {"alpha"}


def test_a_hint_beside_a_final_answer_about_an_expanded_tool_ends_the_turn(crab_agent):
    h = crab_agent([[{"tool": "beta", "args": {"pattern": "x"}}], [{"text": "used $beta"}]], plugins=TOOLS)
    outcome = h.run("go")
    assert outcome.text == "used $beta" and len(h.requests) == 2


def test_a_call_to_a_stub_runs_when_valid_and_expands_it(crab_agent):
    h = crab_agent([[{"tool": "beta", "args": {"pattern": "needle"}}], [{"text": "found"}]], plugins=TOOLS)
    h.run("search")
    results = [m for m in h.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == ["beta needle"]
    assert full(h.requests[1]) == {"beta"}


def test_an_invalid_call_to_a_stub_is_checked_against_the_real_schema(crab_agent):
    h = crab_agent([[{"tool": "gamma", "args": {"count": "many"}}], [{"text": "sorry"}]], plugins=TOOLS)
    h.run("count")
    result = next(m for m in h.requests[1].messages if isinstance(m, ToolResultMessage))
    assert result.is_error and result.content.startswith("invalid arguments for gamma")
    assert result.content.endswith(STUB_CALL_NOTE)
    assert full(h.requests[1]) == {"gamma"}


def test_the_expanded_set_survives_a_resume(crab_agent):
    h = crab_agent(
        [[{"text": "maybe $gamma"}, {"tool": "beta", "args": {"pattern": "p"}}], [{"text": "ok"}]], plugins=TOOLS
    )
    h.run("go")
    resumed = h.run_async(h.agent.resume(h.session.id))
    assert expanded_tools(resumed.messages, h.agent.tools) == {"beta", "gamma"}
    assert resumed.messages == h.session.messages


def test_the_full_view_sends_every_schema_every_time(crab_agent):
    h = crab_agent([[{"text": "hi"}]], plugins=TOOLS, config={"crab.tool_view": "full"})
    h.run("hello")
    assert list(h.requests[0].tools) == [alpha.spec(), beta.spec(), gamma.spec()]


def test_the_full_view_leaves_hints_out_of_the_prompt(crab_agent):
    h = crab_agent([[{"text": "hi"}]], plugins=TOOLS, config={"crab.tool_view": "full"})
    h.run("hello")
    assert "$name" not in h.requests[0].system
    progressive = crab_agent([[{"text": "hi"}]], plugins=TOOLS)
    progressive.run("hello")
    assert "$name" in progressive.requests[0].system


def test_hints_match_only_known_names_and_ignore_trailing_punctuation() -> None:
    known = {"read", "mcp.fetch"}
    assert hinted("use $read. Then $mcp.fetch, not $HOME or $ready", known) == {"read", "mcp.fetch"}
    assert hinted("costs $5", known) == set()


def test_expansion_is_derived_from_user_and_assistant_text_and_calls_of_the_turn() -> None:
    messages = [
        UserMessage("try $beta"),
        AssistantMessage("", tool_calls=(ToolCall("c1", "alpha", {}),)),
        ToolResultMessage("c1", "alpha", "$gamma in a tool result does not count"),
    ]
    known = {"alpha", "beta", "gamma", "delta"}
    assert expanded_tools(messages, known) == {"alpha", "beta"}
    later = [*messages, AssistantMessage("done"), UserMessage("next task"), AssistantMessage("with $delta")]
    assert expanded_tools(later, known) == {"delta"}
    assert expanded_tools(later, known, turns=0) == {"alpha", "beta", "delta"}


def test_a_compacted_turn_keeps_what_the_anchor_carried_until_the_next_turn() -> None:
    kept = [AssistantMessage("", tool_calls=(ToolCall("c1", "alpha", {}),)), ToolResultMessage("c1", "alpha", "ok")]
    payload = anchor_payload(
        "s", kept, reason="threshold", focus=None, summarised=3, tools=["beta", "gone"], tokens_before=1
    )
    tail = carried(payload)[0]  # as a resume reads it from the store: the note hints at what was expanded
    known = {"alpha", "beta", "gamma"}
    assert expanded_tools(tail, known) == {"alpha", "beta"}
    assert expanded_tools([*tail, AssistantMessage("x"), UserMessage("new")], known) == set()


def test_the_view_reads_only_new_messages_and_rescans_when_the_context_is_rewritten() -> None:
    view, known = ToolView("progressive"), frozenset({"alpha", "beta", "gamma"})
    first = (UserMessage("try $beta"), AssistantMessage("", tool_calls=(ToolCall("c1", "alpha", {}),)))
    assert view.expanded("s", first, known) == {"alpha", "beta"}
    grown = (*first, ToolResultMessage("c1", "alpha", "ok"), AssistantMessage("now $gamma"))
    assert view.expanded("s", grown, known) == {"alpha", "beta", "gamma"}
    assert view.expanded("other", grown[2:], known) == {"gamma"}  # sessions are kept apart
    rewritten = (UserMessage("new task"), *grown[2:])  # a compaction or repair: not a continuation
    assert view.expanded("s", rewritten, known) == {"gamma"} == expanded_tools(rewritten, known)
    next_turn = (*rewritten, UserMessage("and now?"))
    assert view.expanded("s", next_turn, known) == set() == expanded_tools(next_turn, known)


def test_a_tool_goes_back_to_a_stub_when_the_next_turn_starts(crab_agent):
    h = crab_agent([[{"tool": "beta", "args": {"pattern": "x"}}], [{"text": "found"}], [{"text": "hi"}]], plugins=TOOLS)
    h.run("search")
    h.run("thanks")
    assert full(h.requests[1]) == {"beta"} and full(h.requests[2]) == set()


def test_tool_specs_keep_registry_order_and_stub_the_rest() -> None:
    tools = {"alpha": alpha, "beta": beta}
    specs = tool_specs(tools, "progressive", {"beta"})
    assert [s.name for s in specs] == ["alpha", "beta"]
    assert specs[0] == stub(alpha) and specs[1] == beta.spec()


def test_a_compaction_mid_turn_keeps_the_turns_expanded_tools_live_and_resumed(crab_agent):
    sent: list = []

    def reply(request):
        if "You summarise a conversation" in request.system:
            return [{"text": "Goal: search, then read."}]
        sent.append(request)
        if len(sent) == 1:
            return [{"tool": "beta", "args": {"pattern": "x" * 1000}}]
        if len(sent) <= 5:
            return [{"tool": "alpha", "args": {"path": "p" * 1500 + str(len(sent))}}]
        return [{"text": "done"}]

    h = crab_agent(reply, plugins=TOOLS, config={"crab.context_window": 2000})
    assert h.run("go").stop == "end"
    compacted = [i for i, r in enumerate(sent) if r.messages[0].content.startswith(CONTINUED)]
    assert compacted, "the turn should have been compacted mid-way"
    after = sent[compacted[0]]
    assert not any(isinstance(m, AssistantMessage) and m.tool_calls[0].name == "beta" for m in after.messages)
    assert full(after) == {"alpha", "beta"}  # beta was summarised away, its schema stays for the turn
    resumed = h.run_async(h.agent.resume(h.session.id))
    assert expanded_tools(resumed.messages, h.agent.tools) == {"alpha", "beta"}


class ForcingProvider(ScriptedProvider):
    """A provider that sends a ``tool_choice``: it names the tools the model must call."""

    def __init__(self, replies, forced) -> None:
        super().__init__(replies)
        self.forced = forced

    def forced_tools(self, request):
        return self.forced(request)


def test_a_tool_the_provider_forces_goes_with_its_full_schema(crab_agent):
    provider = ForcingProvider([[{"tool": "beta", "args": {"pattern": "x"}}], [{"text": "done"}]], lambda r: ["beta"])
    h = crab_agent(provider=provider, plugins=TOOLS)
    assert h.run("find it").text == "done"
    first = {s.name: s for s in h.requests[0].tools}
    assert first["beta"] == beta.spec()  # never the stub the model would copy as its arguments
    assert full(h.requests[0]) == {"beta"}
    assert h.session.described == {"beta"}
    assert not any(STUB_CALL_NOTE in getattr(m, "content", "") for m in h.session.messages)


def test_forcing_any_tool_sends_every_schema_and_nothing_forced_keeps_the_stubs(crab_agent):
    every = ForcingProvider([[{"text": "a"}]], lambda r: [s.name for s in r.tools])
    h = crab_agent(provider=every, plugins=TOOLS)
    h.run("go")
    assert full(h.requests[0]) == {"alpha", "beta", "gamma"}
    none = ForcingProvider([[{"text": "b"}]], lambda r: ["no_such_tool"])
    h = crab_agent(provider=none, plugins=TOOLS)
    h.run("go")
    assert full(h.requests[0]) == set()


def test_a_final_answer_naming_a_stub_gets_one_more_step_as_the_prompt_says(crab_agent):
    # The prompt says a reply without a tool call that writes `$name` of a tool not yet sent in
    # full does not end the turn (and so never to write `$name` in a final answer): the reply
    # is kept, the schema is sent, and the next reply without a new hint ends the turn.
    h = crab_agent([[{"text": "Done: I checked it with $alpha."}], [{"text": "Done."}]], plugins=TOOLS)
    outcome = h.run("check a.txt")
    assert "never write `$name` in a final answer" in h.requests[0].system
    assert "does not end the turn" in h.requests[0].system
    assert outcome.stop == "end" and outcome.text == "Done."
    assert len(h.requests) == 2 and full(h.requests[1]) == {"alpha"}
    assert [m.content for m in h.requests[1].messages[-2:]] == [
        "Done: I checked it with $alpha.",
        SCHEMAS_SENT.format(names="alpha"),
    ]
