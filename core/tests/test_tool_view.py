"""The tool view under the request-prefix invariant: ``progressive`` lists every tool as a constant
stub (name, one line, parameter names and types) on every request, a full schema arrives as
message content (a failed call's error result, a `$name` in the user's prompt), and naming a tool
never costs a model call; ``full`` sends every schema, the same on every request."""

from __future__ import annotations

import types

import crab
from crab._builtin.tool_view import SCHEMA_NOTE, ToolView, hinted, schema_text, stub, stub_parameters
from crab._contracts.messages import ToolResultMessage, UserMessage
from crab._contracts.providers import ModelRequest
from crab._loop.model_context import FULL_SCHEMA
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
    """The tools a request carries with their full schema."""
    registry = {t.name: t for t in (alpha, beta, gamma)}
    return {s.name for s in request.tools if s.parameters == registry[s.name].parameters}


def same_prefix(requests) -> bool:
    return all(r.tools == requests[0].tools and r.system == requests[0].system for r in requests)


def notes(messages) -> list[str]:
    return [m.content for m in messages if isinstance(m, UserMessage) and m.content.startswith("[crab] Full schema")]


def test_the_first_request_lists_every_tool_as_a_stub_with_its_parameters_names_and_types(crab_agent):
    h = crab_agent([[{"text": "hi"}]], plugins=TOOLS)
    h.run("hello")
    specs = {s.name: s for s in h.requests[0].tools}
    assert list(specs) == ["alpha", "beta", "gamma"]  # registry order
    assert full(h.requests[0]) == set()
    assert specs["alpha"].description == "Read the first lines of a file."
    assert specs["alpha"].parameters == {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    }


def test_a_stub_keeps_types_enums_and_the_shape_of_items_but_no_descriptions_or_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"], "description": "how"},
            "paths": {"type": "array", "items": {"type": "string", "description": "one path"}, "maxItems": 3},
            "odd": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"old": {"type": "string", "description": "x"}},
                    "required": ["old"],
                },
            },
        },
        "required": ["mode"],
        "additionalProperties": False,
    }
    assert stub_parameters(schema) == {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "paths": {"type": "array", "items": {"type": "string"}},
            "odd": {},
            "edits": {
                "type": "array",
                "items": {"type": "object", "properties": {"old": {"type": "string"}}, "required": ["old"]},
            },
        },
        "required": ["mode"],
    }
    assert stub_parameters({}) == {"type": "object"}


def test_a_stub_is_the_same_object_every_time_and_a_changed_tool_gets_a_new_one() -> None:
    assert stub(alpha) is stub(alpha) is stub(alpha.spec())
    changed = crab.Tool("alpha", alpha.description, {"type": "object", "properties": {"x": {"type": "string"}}}, None)
    assert stub(changed) is not stub(alpha) and stub(changed).parameters["properties"] == {"x": {"type": "string"}}


def test_a_stub_line_is_the_first_sentence_of_a_long_first_paragraph() -> None:
    long = crab.Tool(
        "t",
        "Find files by name. A pattern without a slash matches names at any depth;\n" + "x " * 80,
        {},
        lambda a, c: "",
    )
    assert stub(long).description == "Find files by name."
    assert len(stub(crab.Tool("u", "y" * 500, {}, lambda a, c: "")).description) == 120


def test_a_reply_naming_a_tool_without_calling_it_ends_the_turn_and_changes_nothing(crab_agent):
    # Was: a hint-only reply got one more step with the tool's schema. Naming a tool now never
    # costs a model call, and the tools array never changes.
    h = crab_agent([[{"text": "Done: I checked it with $alpha."}], [{"text": "hi"}]], plugins=TOOLS)
    outcome = h.run("check a.txt")
    assert outcome.stop == "end" and outcome.text == "Done: I checked it with $alpha."
    assert len(h.requests) == 1
    h.run("next")
    assert len(h.requests) == 2 and same_prefix(h.requests) and full(h.requests[1]) == set()
    assert "$name" not in h.requests[0].system and "does not end the turn" not in h.requests[0].system


def test_a_call_to_a_stub_runs_when_valid_and_the_tools_array_stays_as_it_was(crab_agent):
    h = crab_agent([[{"tool": "beta", "args": {"pattern": "needle"}}], [{"text": "found"}]], plugins=TOOLS)
    h.run("search")
    results = [m for m in h.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert [r.content for r in results] == ["beta needle"]
    assert same_prefix(h.requests) and full(h.requests[1]) == set()


def test_an_invalid_call_to_a_stub_is_checked_against_the_real_schema_and_gets_it_in_its_result(crab_agent):
    h = crab_agent([[{"tool": "gamma", "args": {"count": "many"}}], [{"text": "sorry"}]], plugins=TOOLS)
    h.run("count")
    result = next(m for m in h.requests[1].messages if isinstance(m, ToolResultMessage))
    assert result.is_error and result.content.startswith("invalid arguments for gamma")
    assert result.content.endswith(FULL_SCHEMA.format(schema=schema_text(gamma)))
    assert same_prefix(h.requests)


def test_the_full_view_adds_no_schema_to_an_invalid_calls_result(crab_agent):
    h = crab_agent(
        [[{"tool": "gamma", "args": {"count": "many"}}], [{"text": "sorry"}]],
        plugins=TOOLS,
        config={"crab.tool_view": "full"},
    )
    h.run("count")
    result = next(m for m in h.requests[1].messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "full schema" not in result.content


def test_a_tool_the_user_names_gets_its_schema_as_a_note_after_the_prompt(crab_agent):
    h = crab_agent([[{"text": "ok"}], [{"text": "fine"}]], plugins=TOOLS)
    h.run("use $gamma and $beta, not $HOME")
    first = h.requests[0].messages
    assert first[0] == UserMessage("use $gamma and $beta, not $HOME")
    # registry order, one note recorded right after the prompt (before crab's date note)
    assert first[1].content == "\n".join(SCHEMA_NOTE.format(name=t.name, schema=schema_text(t)) for t in (beta, gamma))
    h.run("again, no hint")
    assert h.requests[1].messages[: len(first) + 1] == (*first, h.session.messages[len(first)])
    assert len(notes(h.requests[1].messages)) == 1 and same_prefix(h.requests)
    resumed = h.run_async(h.agent.resume(h.session.id))
    assert resumed.messages == h.session.messages  # recorded: a resume replays the same bytes


def test_the_model_naming_a_tool_records_no_note(crab_agent):
    h = crab_agent([[{"text": "I would use $alpha"}]], plugins=TOOLS)
    h.run("go")
    assert notes(h.session.messages) == []


def test_the_full_view_sends_every_schema_every_time_and_no_notes(crab_agent):
    h = crab_agent(
        [[{"tool": "beta", "args": {"pattern": "x"}}], [{"text": "hi"}], [{"text": "again"}]],
        plugins=TOOLS,
        config={"crab.tool_view": "full"},
    )
    h.run("hello $alpha")
    h.run("more")
    assert list(h.requests[0].tools) == [alpha.spec(), beta.spec(), gamma.spec()]
    assert same_prefix(h.requests) and notes(h.session.messages) == []


def test_only_the_progressive_view_explains_its_stubs_in_the_prompt(crab_agent):
    h = crab_agent([[{"text": "hi"}]], plugins=TOOLS, config={"crab.tool_view": "full"})
    h.run("hello")
    assert "parameters' names and types" not in h.requests[0].system
    progressive = crab_agent([[{"text": "hi"}]], plugins=TOOLS)
    progressive.run("hello")
    assert "parameters' names and types" in progressive.requests[0].system


def test_hints_match_only_known_names_and_ignore_trailing_punctuation() -> None:
    known = {"read", "mcp.fetch"}
    assert hinted("use $read. Then $mcp.fetch, not $HOME or $ready", known) == {"read", "mcp.fetch"}
    assert hinted("costs $5", known) == set()


def test_the_view_keeps_no_state_per_session() -> None:
    # Was: the view scanned each session's messages for hints and calls. Now a request's tools
    # depend on the registry alone: the same answer for any session and any messages.
    view = ToolView("progressive")
    specs = (alpha.spec(), beta.spec())
    one = view.crab_before_model_call(ModelRequest("m", "s", (UserMessage("$beta"),), specs))
    two = view.crab_before_model_call(ModelRequest("m", "s", (), specs))
    assert one is not None and two is not None and one.tools == two.tools == (stub(alpha), stub(beta))
    assert ToolView("full").crab_before_model_call(ModelRequest("m", "s", (), specs)) is None


def test_tools_stay_the_same_across_turns_and_a_compaction(crab_agent):
    sent: list = []

    def reply(request):
        if request.messages and request.messages[-1].content.startswith("[crab] Compaction"):
            return [{"text": "Goal: search, then read."}]
        sent.append(request)
        if len(sent) == 1:
            return [{"tool": "beta", "args": {"pattern": "x" * 1000}}]
        if len(sent) <= 5:
            return [{"tool": "alpha", "args": {"path": "p" * 1500 + str(len(sent))}}]
        return [{"text": "done"}]

    h = crab_agent(reply, plugins=TOOLS, config={"crab.context_window": 2000})
    assert h.run("go").stop == "end"
    assert any(r.messages[0].content.startswith("(The conversation before") for r in sent), "no compaction"
    assert all(r.tools == sent[0].tools for r in h.requests)  # summary requests included


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
    assert same_prefix(h.requests)


def test_forcing_any_tool_sends_every_schema_and_nothing_forced_keeps_the_stubs(crab_agent):
    every = ForcingProvider([[{"text": "a"}]], lambda r: [s.name for s in r.tools])
    h = crab_agent(provider=every, plugins=TOOLS)
    h.run("go")
    assert full(h.requests[0]) == {"alpha", "beta", "gamma"}
    none = ForcingProvider([[{"text": "b"}]], lambda r: ["no_such_tool"])
    h = crab_agent(provider=none, plugins=TOOLS)
    h.run("go")
    assert full(h.requests[0]) == set()
