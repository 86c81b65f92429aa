"""The everyday session commands through the router, on scripted providers: /model, /new, /clear,
/resume, /cost, /edit; and the ``-r`` helpers of ``crab chat`` (its optional value, the picker)."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab._builtin.memory_store import MemoryStore
from crab._cli.app import resume_picker_args
from crab._cli.chat_sessions import chosen, exit_line
from crab._contracts.errors import UsageError
from crab._contracts.events import TurnEnded, UsageEvent
from crab.testing import AgentHarness, ScriptedProvider


class PricedScripted(ScriptedProvider):
    """A second scripted provider, ``other/big``, with its own window and prices."""

    def models(self) -> list[crab.ModelInfo]:
        return [crab.ModelInfo("big", self.name, context_window=50_000, input_price=1.0, output_price=2.0)]


class OtherProvider:
    def __init__(self, provider: ScriptedProvider) -> None:
        self.provider = provider

    @crab.hookimpl
    def crab_providers(self, config: object) -> list[object]:
        return [self.provider]


def harness(
    store: MemoryStore, other: ScriptedProvider, *, replies: list | None = None, local: bool = True
) -> AgentHarness:
    return AgentHarness(
        replies if replies is not None else [[{"text": "from scripted"}]],
        plugins={"other": OtherProvider(other)},
        store=store,
        local=local,
    )


def model_entries(h: AgentHarness, session_id: str) -> list[dict]:
    entries = h.run_async(h.store.entries(session_id))
    return [dict(e.payload) for e in entries if e.type == "event" and e.payload.get("kind") == "model"]


def test_model_switches_the_next_request_and_is_stored_and_restored_on_resume(crab_home) -> None:
    store = MemoryStore()
    other = PricedScripted(
        [[{"text": "from big"}, {"usage": {"input_tokens": 1000, "output_tokens": 500}}]], name="other", model="big"
    )
    first = harness(store, other, replies=[[{"text": "from scripted"}, {"usage": {"input_tokens": 10}}]] * 2)
    try:
        assert first.run("one").text == "from scripted"
        assert [r.model for r in first.requests] == ["scripted"]
        switched = first.run("/model other/big")
        assert switched.error is None and "model: other/big from the next request on" in switched.text
        assert "context 50k, $1/M in, $2/M out" in switched.text
        assert first.run("two").text == "from big"
        assert [r.model for r in other.requests] == ["big"] and len(first.requests) == 1
        # Pricing and the token budget follow the new model.
        assert first.events_of(UsageEvent)[-1].usage.cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
        assert first.agent.context.budget(first.session).window == 50_000
        assert first.events_of(TurnEnded)[-1].model == "big"
        assert first.events_of(TurnEnded)[-1].context_window == 50_000
        assert model_entries(first, first.session.id) == [{"kind": "model", "provider": "other", "model": "big"}]
        cost = first.run("/cost").text
        assert "mock/scripted  1 call, 10 in, 0 out" in cost
        assert "other/big      1 call, 1,000 in, 500 out · $0.0020" in cost and "total" in cost
        shown = first.run("/session").text
        assert "model: other/big" in shown
        # A handoff starts the stored context afresh: the switch is recorded after it again.
        first.run("/handoff next")
        session_id = first.session.id
    finally:
        first.close()
    other.replies = [[{"text": "big again"}]]
    other._calls = 0
    second = harness(store, other)
    try:
        resumed = second.run_async(second.agent.resume(session_id))
        assert second.agent.model_for(resumed).name == "other/big"
        assert second.run_async(second.agent.handle_input(resumed, "three")).text == "big again"
        assert second.requests == []  # the run's own scripted model was not asked
    finally:
        second.close()


def test_model_without_an_argument_lists_the_configured_choices(crab_home) -> None:
    h = harness(MemoryStore(), PricedScripted([], name="other", model="big"))
    try:
        text = h.run("/model").text
        assert text.splitlines()[0] == "model: mock/scripted (context 1M)"
        assert "  * mock/scripted" in text and "    other/big" in text
        assert h.run("/model big").error is not None  # a model of the current provider (mock) only
        assert h.run("/model other/big").error is None
        assert "  * other/big" in h.run("/model").text
        assert h.run("/model mock/scripted").error is None  # back to the run's own
        assert h.agent.model_for(h.session).name == "mock/scripted"
    finally:
        h.close()


def test_a_model_or_provider_that_is_not_configured_is_one_line_saying_what_to_do(crab_home) -> None:
    h = harness(MemoryStore(), PricedScripted([], name="other", model="big"))
    try:
        unknown = h.run("/model other/huge")
        assert unknown.error is not None and "\n" not in unknown.error
        assert "'huge' is not a configured model of other (other has: big)" in unknown.error
        assert "docs/providers.md" in unknown.error
        nowhere = h.run("/model nosuch/model")
        assert nowhere.error is not None and "no provider named 'nosuch' is loaded" in nowhere.error
        assert h.agent.model_for(h.session).name == "mock/scripted"  # nothing switched
        assert model_entries(h, h.session.id) == []
    finally:
        h.close()


def test_a_model_given_on_the_command_line_wins_over_the_stored_switch(crab_home) -> None:
    from crab._cli.options import RunOptions
    from crab._cli.setup import open_session

    store = MemoryStore()
    h = harness(store, PricedScripted([], name="other", model="big"))
    try:
        h.run("/model other/big")
        kept = h.run_async(open_session(h.agent, RunOptions(resume=h.session.id)))
        assert h.agent.model_for(kept).name == "other/big"  # no -m: the switch holds
        given = h.run_async(open_session(h.agent, RunOptions(model="mock/scripted", resume=h.session.id)))
        assert h.agent.model_for(given).name == "mock/scripted"
        assert model_entries(h, h.session.id)[-1] == {"kind": "model", "provider": "mock", "model": "scripted"}
    finally:
        h.close()


def test_a_resumed_session_whose_provider_is_gone_keeps_the_runs_model_and_says_why(crab_home) -> None:
    store = MemoryStore()
    first = harness(store, PricedScripted([], name="other", model="big"))
    try:
        first.run("/model other/big")
        session_id = first.session.id
    finally:
        first.close()
    alone = AgentHarness([[{"text": "ok"}]], store=store)
    try:
        resumed = alone.run_async(alone.agent.resume(session_id))
        assert alone.agent.model_for(resumed).name == "mock/scripted"
        warned = [e.message for e in alone.events_of(crab.events.NoticeEvent) if e.level == "warning"]
        assert any("other/big" in line and "provider other is not loaded" in line for line in warned)
    finally:
        alone.close()


def test_new_starts_a_fresh_session_and_the_old_one_stays(crab_home) -> None:
    h = harness(MemoryStore(), PricedScripted([], name="other", model="big"))
    try:
        h.run("hello")
        old = h.session.id
        outcome = h.run("/new")
        assert outcome.switch_session and outcome.switch_session != old and not outcome.clear_screen
        assert f"{old} stays in the store" in outcome.text
        assert h.run_async(h.store.get_session(old)).entry_count
        fresh = h.run_async(h.agent.resume(outcome.switch_session))
        assert fresh.messages == []
    finally:
        h.close()


def test_new_keeps_a_channel_conversations_key(crab_home) -> None:
    h = harness(MemoryStore(), PricedScripted([], name="other", model="big"), local=False)
    try:
        keyed = h.run_async(h.handle.session_for("chat", "42"))
        outcome = h.run_async(h.agent.handle_input(keyed, "/new"))
        info = h.run_async(h.store.get_session(outcome.switch_session))
        assert info.meta == keyed.info.meta and info.meta  # the new session is still chat 42's
        assert "/resume" not in outcome.text  # remote channels have no /resume
    finally:
        h.close()


def test_clear_is_new_and_asks_the_terminal_to_clear(crab_home) -> None:
    h = harness(MemoryStore(), PricedScripted([], name="other", model="big"))
    try:
        outcome = h.run("/clear")
        assert outcome.clear_screen and outcome.switch_session
    finally:
        h.close()


def test_resume_lists_this_folders_sessions_and_switches_by_number_or_id(crab_home, tmp_path: Path) -> None:
    store = MemoryStore()
    h = harness(store, PricedScripted([], name="other", model="big"), replies=[[{"text": "ok"}]] * 3)
    try:
        h.run("first question\nwith a second line")
        earlier = h.session.id
        h.run_async(store.create_session(str(tmp_path / "elsewhere")))  # another folder: not listed
        h.session = h.run_async(h.agent.new_session())
        listed = h.run("/resume").text
        assert listed.splitlines()[0] == "recent sessions of this folder:"
        assert f"1. {earlier} · " in listed and "entries · first question" in listed
        assert "second line" not in listed and len(listed.splitlines()) == 3
        assert h.run("/resume 1").switch_session == earlier
        assert h.run(f"/resume {earlier}").switch_session == earlier
        assert h.run("/resume 7").error == "no session number 7: /resume lists 1"
        missing = h.run("/resume 20990101T000000-000000")
        assert missing.error is not None and "no session '20990101T000000-000000'" in missing.error
    finally:
        h.close()


def test_resume_clear_and_edit_are_for_the_local_terminal_only(crab_home) -> None:
    h = harness(MemoryStore(), PricedScripted([], name="other", model="big"), local=False)
    try:
        for command in ("/resume", "/clear", "/edit"):
            assert h.run(command).error == f"{command} only works in a local terminal"
        assert h.run("/new").error is None and h.run("/cost").error is None and h.run("/model").error is None
    finally:
        h.close()


def test_cost_before_any_call_and_edit_outside_chat(crab_home) -> None:
    h = harness(MemoryStore(), PricedScripted([], name="other", model="big"))
    try:
        assert h.run("/cost").text == "no model calls in this session yet"
        edit = h.run("/edit")
        assert edit.error is not None and "crab chat's prompt" in edit.error
        helped = h.run("/help").text
        for name in ("model", "new", "clear", "resume", "cost", "edit"):
            assert f"  /{name}" in helped
    finally:
        h.close()


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        (["chat", "-r"], ["chat", "--resume="]),
        (["chat", "-r", "ID"], ["chat", "-r", "ID"]),
        (["chat", "-r", "-m", "x"], ["chat", "--resume=", "-m", "x"]),
        (["chat", "-m", "mock/tour", "--resume"], ["chat", "-m", "mock/tour", "--resume="]),
        (["-r"], ["--resume="]),
        (["-r", "chat"], ["--resume=", "chat"]),
        (["--store", "jsonl", "-r"], ["--store", "jsonl", "--resume="]),
        (["eval", "x", "-r"], ["eval", "x", "-r"]),  # another command's -r is its own
        (["--plugins", "chat", "eval", "-r"], ["--plugins", "chat", "eval", "-r"]),
    ],
)
def test_r_without_a_value_means_the_picker(given: list[str], meant: list[str]) -> None:
    assert resume_picker_args(given) == meant


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        (["-w"], ["--worktree="]),
        (["-w", "fix"], ["-w", "fix"]),
        (["-w", "chat"], ["--worktree=", "chat"]),
        (["chat", "--worktree", "-m", "x"], ["chat", "--worktree=", "-m", "x"]),
        (["run", "-w", "fix it"], ["run", "--worktree=", "fix it"]),  # in a run the next word is the prompt
        (["run", "-o", "json", "-w", "go"], ["run", "-o", "json", "--worktree=", "go"]),
        (["run", "--worktree=name", "go"], ["run", "--worktree=name", "go"]),
        (["run", "-r", "x"], ["run", "-r", "x"]),  # crab run has no picker
        (["sessions", "list", "-w", "/src"], ["sessions", "list", "-w", "/src"]),  # another command's -w
    ],
)
def test_worktree_without_a_name_is_written_empty(given: list[str], meant: list[str]) -> None:
    assert resume_picker_args(given) == meant


def test_the_pickers_answer() -> None:
    ids = ["20261202T010000-aaaaaa", "20261201T230000-bbbbbb"]
    assert chosen("", ids) is None
    assert chosen("2", ids) == ids[1]
    assert chosen(" 20261202T01", ids) == ids[0]
    assert chosen("20251231T000000-cccccc", ids) == "20251231T000000-cccccc"  # open_session checks it
    with pytest.raises(UsageError, match="no session number 5: pick 1 to 2"):
        chosen("5", ids)


def test_the_exit_line_names_the_command_that_resumes(crab_home) -> None:
    h = AgentHarness([])
    try:
        assert exit_line(h.agent, h.session) == ""  # memory sessions end with the process
        h.agent.store.name = "sqlite"  # type: ignore[misc]
        assert exit_line(h.agent, h.session) == f"resume this session with: crab chat -r {h.session.id}\n"
        line = exit_line(h.agent, h.session, "sqlite")
        assert line == f"resume this session with: crab chat --store sqlite -r {h.session.id}\n"
    finally:
        h.close()
