"""Sampling: the tests' own server (the SDK's ``MCPServer``, over stdio) asks crab's model through
``ctx.session.create_message`` while its tool runs. crab answers only after the user approved it
through the permission question; refused where nobody can be asked, on a remote channel unless
the user's config says ``sampling = "remote"``, and when ``sampling = "off"``. The answer is
bounded in tokens, shown as a notice and counted in the turn's usage."""

from __future__ import annotations

from typing import Any

import crab_mcp
from crab import ModelRequest, PermissionRequest
from crab.events import NoticeEvent, UsageEvent
from crab.messages import ToolResultMessage

SYSTEM = "You are terse."


def replies(request: ModelRequest) -> list[dict[str, Any]]:
    """The model: answers the server's sampling request, else calls tiny_sample, then ends."""
    if request.system == SYSTEM:
        return [{"text": "forty-two"}, {"usage": {"input_tokens": 7, "output_tokens": 3}}]
    if isinstance(request.messages[-1], ToolResultMessage):
        return [{"text": "done"}, {"usage": {"input_tokens": 20, "output_tokens": 2}}]
    args = {"text": "What is the answer?", "max_tokens": 4000}
    return [{"tool": "tiny_sample", "args": args}, {"usage": {"input_tokens": 10, "output_tokens": 1}}]


class Asker:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> str:
        self.asked.append(request)
        return self.answer


def run(crab_agent: Any, tiny_cmd: Any, ask: Any, **options: Any) -> Any:
    config = {"plugins.mcp.servers": {"tiny": tiny_cmd()}, "crab.permissions": "yolo"}
    config.update(options.pop("config", {}))
    h = crab_agent(replies, plugins={"mcp": crab_mcp}, config=config, ask=ask, **options)
    outcome = h.run("ask the server")
    (result,) = [m for m in h.session.messages if isinstance(m, ToolResultMessage)]
    sampled = [r for r in h.requests if r.system == SYSTEM]
    return h, outcome, result, sampled


def test_approved_sampling_asks_calls_the_model_bounded_shows_and_counts(crab_agent, tiny_cmd, unfence):
    ask = Asker("once")
    h, outcome, result, sampled = run(crab_agent, tiny_cmd, ask)
    assert unfence(result.content) == "answered: forty-two (model scripted, endTurn)"
    (question,) = ask.asked
    assert question.tool == "tiny (MCP sampling)" and question.permission == "network"
    assert "MCP server 'tiny' asks crab's model" in question.summary
    assert "at most 1024 tokens" in question.summary  # the server asked 4000: the config's bound wins
    assert "system: You are terse." in question.summary and "user: What is the answer?" in question.summary
    (request,) = sampled
    assert request.max_tokens == 1024 and request.tools == ()
    assert [m.content for m in request.messages] == ["What is the answer?"]
    notices = [e.message for e in h.events_of(NoticeEvent)]
    assert "MCP tiny sampling answer (to the server): forty-two" in notices
    assert len(h.events_of(UsageEvent)) == 3
    assert (outcome.usage.input_tokens, outcome.usage.output_tokens) == (37, 6)  # the sampling call counted


def test_the_servers_smaller_bound_wins(crab_agent, tiny_cmd):
    *_, sampled = run(crab_agent, tiny_cmd, Asker("once"), config={"plugins.mcp.sampling_max_tokens": 5000})
    assert sampled[0].max_tokens == 4000


def test_declined_sampling_is_refused_and_the_model_never_called(crab_agent, tiny_cmd, unfence):
    ask = Asker("deny")
    _, _, result, sampled = run(crab_agent, tiny_cmd, ask)
    assert unfence(result.content) == "refused: crab refused the sampling request: the user declined"
    assert len(ask.asked) == 1 and sampled == []


def test_nobody_to_ask_is_refused_at_once(crab_agent, tiny_cmd, unfence):
    _, _, result, sampled = run(crab_agent, tiny_cmd, None)
    assert unfence(result.content).startswith("refused: crab refused the sampling request: nobody can be asked")
    assert sampled == []


def test_a_remote_channel_is_refused_unless_the_user_allows_it(crab_agent, tiny_cmd, unfence):
    ask = Asker("once")
    _, _, result, sampled = run(crab_agent, tiny_cmd, ask, local=False)
    assert "this is a remote channel" in unfence(result.content) and 'sampling = "remote"' in result.content
    assert ask.asked == [] and sampled == []
    _, _, allowed, sampled = run(crab_agent, tiny_cmd, ask, local=False, config={"plugins.mcp.sampling": "remote"})
    assert unfence(allowed.content).startswith("answered: forty-two") and len(ask.asked) == 1


def test_sampling_off_refuses_without_asking(crab_agent, tiny_cmd, unfence):
    ask = Asker("once")
    _, _, result, sampled = run(crab_agent, tiny_cmd, ask, config={"plugins.mcp.sampling": "off"})
    assert "sampling is off in your config" in unfence(result.content)
    assert ask.asked == [] and sampled == []
