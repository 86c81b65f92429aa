"""``crab_completions``: every plugin's pairs reach ``ChatState.complete`` (``crab chat``'s), in
plugin order, each text once, masked and capped; one that raises or answers nonsense gives
nothing, is reported once and dropped, and typing goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import crab
from crab._cli.chat_completion import plugin_completions
from crab._contracts.events import NoticeEvent
from crab._host.dispatch import MAX_COMPLETIONS
from crab.testing import AgentHarness


class Tags:
    """Completes ``#`` words from a fixed list; sees which words it was asked for."""

    def __init__(self, tags: list[str]) -> None:
        self.tags = tags
        self.asked: list[str] = []

    @crab.hookimpl
    def crab_completions(self, agent: crab.AgentHandle, word: str) -> list[tuple[str, str]] | None:
        assert isinstance(agent, crab.AgentHandle)
        self.asked.append(word)
        if not word.startswith("#"):
            return None
        return [(f"#{tag}", f"the tag {tag}") for tag in self.tags if f"#{tag}".startswith(word)]


class Broken:
    def __init__(self) -> None:
        self.calls = 0

    @crab.hookimpl
    def crab_completions(self, word: str) -> list[tuple[str, str]]:
        self.calls += 1
        raise RuntimeError("index gone")


class Odd:
    @crab.hookimpl
    def crab_completions(self) -> Any:
        return "#everything"


def state_of(h: AgentHarness) -> crab.rendering.ChatState:
    return crab.rendering.ChatState(
        workspace=h.workspace, history=h.workspace / "history", complete=plugin_completions(h.agent)
    )


def test_a_chat_state_without_plugins_completes_nothing(tmp_path: Path) -> None:
    assert crab.rendering.ChatState(workspace=tmp_path, history=tmp_path / "h").complete("@x:") == []


def test_the_hooks_pairs_reach_chat_state_complete_in_plugin_order_each_text_once(crab_agent) -> None:
    first, second = Tags(["todo", "tea"]), Tags(["tea", "tomato\nsoup", "tulip"])
    h = crab_agent(plugins={"a": first, "b": second})
    state = state_of(h)
    assert state.complete("#t") == [
        ("#todo", "the tag todo"),
        ("#tea", "the tag tea"),  # a's: the first plugin's pair for a text wins
        ("#tulip", "the tag tulip"),  # a text of two lines is left out
    ]
    assert state.complete("#to") == [("#todo", "the tag todo")]
    assert state.complete("plain") == [] and state.complete("") == []
    assert first.asked == ["#t", "#to", "plain"]  # an empty word asks nobody


def test_a_raising_or_odd_implementation_gives_nothing_once_reported_and_typing_goes_on(crab_agent) -> None:
    broken = Broken()
    h = crab_agent(plugins={"broken": broken, "odd": Odd(), "tags": Tags(["todo"])})
    state = state_of(h)
    assert state.complete("#t") == [("#todo", "the tag todo")]
    assert state.complete("#t") == [("#todo", "the tag todo")]
    assert broken.calls == 1  # dropped for the run after its first failure
    lines = [e.message for e in h.events_of(NoticeEvent)]
    assert lines == [
        "plugin broken failed: crab_completions raised RuntimeError: index gone "
        "(its crab_completions is not called again in this run)",
        "plugin odd failed: crab_completions returned str, expected a list of (text, description) pairs "
        "or None (its crab_completions is not called again in this run)",
    ]
    assert h.host.records["broken"].status == "loaded"  # only the hook is lost


def test_strict_plugins_still_never_break_typing(crab_agent) -> None:
    h = crab_agent(plugins={"broken": Broken()})
    h.host.dispatch.strict = True
    assert state_of(h).complete("#t") == []


def test_pairs_are_capped_and_masked(crab_agent, monkeypatch) -> None:
    monkeypatch.setenv("TAGS_API_KEY", "sk-tag-secret-0123456789")
    h = crab_agent(plugins={"tags": Tags([f"t{n:03}" for n in range(80)] + ["sk-tag-secret-0123456789"])})
    state = state_of(h)
    found = state.complete("#t")
    assert len(found) == MAX_COMPLETIONS == 50
    assert found[0] == ("#t000", "the tag t000")
    assert state.complete("#s") == [("#[redacted]", "the tag [redacted]")]
