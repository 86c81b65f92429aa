"""A user command's ``model:``: its turn runs on that model, the session goes back to its own after
it (a failure and an abort too), an untrusted project may not choose, and a model that is not
configured is one line. Two scripted providers (the run's ``mock/scripted`` and ``other/big``)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import crab
from crab.events import CommandOutput, NoticeEvent
from crab.testing import AgentHarness, ScriptedProvider, trust_project
from crab_skills import SkillsPlugin


class _Other:
    """A second provider plugin: ``other`` with the one model ``big``."""

    def __init__(self, provider: ScriptedProvider) -> None:
        self.provider = provider

    @crab.hookimpl
    def crab_providers(self, config: object) -> list[object]:
        return [self.provider]


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    return path


def _harness(replies: list[Any], big: list[Any], **options: Any) -> tuple[AgentHarness, ScriptedProvider]:
    other = ScriptedProvider(big, name="other", model="big")
    plugins = {"skills": SkillsPlugin(), "other": _Other(other), **options.pop("plugins", {})}
    return AgentHarness(replies, plugins=plugins, **options), other


def _switches(h: AgentHarness) -> list[str]:
    entries = h.run_async(h.store.entries(h.session.id))
    return [
        f"{e.payload['provider']}/{e.payload['model']}"
        for e in entries
        if e.type == "event" and e.payload.get("kind") == "model"
    ]


def _notices(h: AgentHarness, level: str) -> list[str]:
    return [e.message for e in h.events_of(NoticeEvent) if e.level == level]


DEEP = "---\ndescription: think hard\nmodel: other/big\n---\nThink hard about $ARGUMENTS.\n"


def test_the_commands_turn_runs_on_its_model_and_the_session_goes_back_after_it(crab_home):
    _write(crab_home / "commands", "deep", DEEP)
    h, other = _harness([[{"text": "from scripted"}]], [[{"text": "from big"}]])
    try:
        outcome = h.run("/deep the cache")
        assert (outcome.stop, outcome.text) == ("end", "from big")
        assert [r.model for r in other.requests] == ["big"] and h.requests == []
        assert h.agent.model_for(h.session).name == "mock/scripted"
        # Recorded as /model records a switch, there and back, so a resume talks to the session's model.
        assert _switches(h) == ["other/big", "mock/scripted"]
        infos = _notices(h, "info")
        assert "/deep runs on other/big; the session goes back to mock/scripted after it" in infos
        assert "model: mock/scripted again (/deep ran on other/big)" in infos
        assert h.run("and now").text == "from scripted"
        assert len(other.requests) == 1 and [r.model for r in h.requests] == ["scripted"]
    finally:
        h.close()


def test_a_model_of_the_sessions_provider_may_be_named_alone_and_the_same_model_switches_nothing(crab_home):
    _write(crab_home / "commands", "same", "---\nmodel: scripted\n---\nSame model.\n")
    _write(crab_home / "commands", "inherit", "---\nmodel: inherit\n---\nClaude Code's word for the session's.\n")
    h, _ = _harness([[{"text": "a"}], [{"text": "b"}]], [])
    try:
        assert h.run("/same").text == "a"
        assert h.run("/inherit").text == "b"
        assert _switches(h) == [] and _notices(h, "warning") == []
    finally:
        h.close()


def test_a_model_that_is_not_configured_is_one_line_and_the_command_does_not_run(crab_home):
    _write(crab_home / "commands", "huge", "---\nmodel: other/huge\n---\nGo.\n")
    _write(crab_home / "commands", "nowhere", "---\nmodel: nosuch/model\n---\nGo.\n")
    h, other = _harness([], [])
    try:
        for name in ("huge", "nowhere"):
            outcome = h.run(f"/{name}")
            assert outcome.error is not None and "\n" not in outcome.error
            assert outcome.error.startswith(f"/{name} asks for the model ")
            assert "which is not configured (configured: mock/scripted, other/big)" in outcome.error
        assert h.requests == [] and other.requests == [] and _switches(h) == []
        assert h.agent.model_for(h.session).name == "mock/scripted"
        assert [m for m in h.session.messages] == []  # nothing was recorded
    finally:
        h.close()


def test_the_session_goes_back_after_a_failed_turn(crab_home):
    _write(crab_home / "commands", "deep", DEEP)
    h, other = _harness([[{"text": "from scripted"}]], [[{"error": "overloaded", "kind": "server"}]])
    try:
        outcome = h.run("/deep x")
        assert outcome.error is not None
        assert [r.model for r in other.requests] == ["big"]
        assert h.agent.model_for(h.session).name == "mock/scripted"
        assert _switches(h) == ["other/big", "mock/scripted"]
        assert h.run("next").text == "from scripted"
    finally:
        h.close()


def test_the_session_goes_back_after_an_aborted_turn(crab_home):
    _write(crab_home / "commands", "deep", DEEP)
    h, other = _harness([[{"text": "from scripted"}]], [[{"delay": 60}, {"text": "never"}]])

    async def abort_while_big_answers() -> crab.steps.TurnOutcome:
        running = asyncio.create_task(h.agent.handle_input(h.session, "/deep x"))
        deadline = time.monotonic() + 30
        while not other.requests:
            assert time.monotonic() < deadline, "the command's model was never asked"
            await asyncio.sleep(0.01)
        assert h.agent.abort(h.session)
        return await running

    try:
        outcome = h.run_async(abort_while_big_answers())
        assert outcome.stop == "aborted"
        assert h.agent.model_for(h.session).name == "mock/scripted"
        assert _switches(h) == ["other/big", "mock/scripted"]
        assert h.run("next").text == "from scripted"
    finally:
        h.close()


class _Queue:
    """A tool that queues a follow-up input while the command's turn runs (as typing ahead does)."""

    def __init__(self) -> None:
        self.harness: AgentHarness | None = None
        self.queued: asyncio.Task[crab.steps.TurnOutcome] | None = None

    @crab.hookimpl
    def crab_tools(self, config: object) -> list[crab.Tool]:
        async def queue(ctx: crab.ToolContext) -> str:
            """Queue a follow-up."""
            assert self.harness is not None
            self.queued = asyncio.ensure_future(self.harness.agent.handle_input(self.harness.session, "follow-up"))
            await asyncio.sleep(0)
            return "queued"

        made: crab.Tool = crab.tool(name="queue")(queue)
        return [made]


def test_input_queued_behind_the_command_runs_on_the_sessions_model(crab_home):
    _write(crab_home / "commands", "deep", DEEP)
    tools = _Queue()
    h, other = _harness(
        [[{"text": "follow-up answered"}]],
        [[{"tool": "queue", "args": {}}], [{"text": "deep done"}]],
        plugins={"queue": tools},
        config={"crab.permissions": "yolo"},
    )
    tools.harness = h
    try:
        assert h.run("/deep x").text == "deep done"
        assert tools.queued is not None and tools.queued.done()
        assert tools.queued.result().text == "follow-up answered"
        assert [r.model for r in other.requests] == ["big", "big"]  # the command's turn, both calls
        assert [r.model for r in h.requests] == ["scripted"]  # the follow-up: the session's model
        assert _switches(h) == ["other/big", "mock/scripted"]
    finally:
        h.close()


def test_a_model_chosen_with_slash_model_during_the_turn_is_kept(crab_home):
    _write(crab_home / "commands", "deep", DEEP)

    class _Switcher:
        @crab.hookimpl
        def crab_tools(self, config: object) -> list[crab.Tool]:
            async def choose(ctx: crab.ToolContext) -> str:
                """Switch the model as the user would with /model."""
                await ctx.handle.handle_input(h.session, "/model mock/scripted")
                return "switched"

            made: crab.Tool = crab.tool(name="choose")(choose)
            return [made]

    h, other = _harness(
        [[{"text": "done"}]],
        [[{"tool": "choose", "args": {}}]],
        plugins={"sw": _Switcher()},
        config={"crab.permissions": "yolo"},
    )
    try:
        assert h.run("/deep x").text == "done"  # /model takes effect at the next request
        assert [r.model for r in other.requests] == ["big"] and [r.model for r in h.requests] == ["scripted"]
        assert _switches(h) == ["other/big", "mock/scripted"]  # the user's /model, not a restore
        assert not any("again (/deep" in line for line in _notices(h, "info"))
    finally:
        h.close()


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "work"
    (project / ".git").mkdir(parents=True, exist_ok=True)
    return project


def test_an_untrusted_projects_command_runs_on_the_sessions_model(crab_home, tmp_path):
    _write(_project(tmp_path) / ".crab" / "commands", "spend", "---\nmodel: other/big\n---\nSpend.\n")
    h, other = _harness([[{"text": "from scripted"}]], [[{"text": "from big"}]])
    try:
        assert h.run("/spend").text == "from scripted"
        assert other.requests == [] and _switches(h) == []
        assert (
            "/spend is from a project you have not trusted (crab trust): its model: other/big is ignored, "
            "and it runs on mock/scripted"
        ) in _notices(h, "warning")
    finally:
        h.close()


def test_a_trusted_projects_command_chooses_its_model(crab_home, tmp_path):
    project = _project(tmp_path)
    _write(project / ".crab" / "commands", "spend", "---\nmodel: other/big\n---\nSpend.\n")
    config = project / ".crab" / "config.toml"
    config.write_text("", encoding="utf-8")
    trust_project(config)
    h, other = _harness([], [[{"text": "from big"}]], workspace=project)
    try:
        assert h.agent.commands["spend"].description == "Spend. (project)"
        assert h.run("/spend").text == "from big"
        assert [r.model for r in other.requests] == ["big"]
        assert _switches(h) == ["other/big", "mock/scripted"]
    finally:
        h.close()


def test_help_still_lists_a_command_with_a_model(crab_home):
    _write(crab_home / "commands", "deep", DEEP)
    h, _ = _harness([], [])
    try:
        h.run("/help")
        assert "think hard (user)" in h.events_of(CommandOutput)[-1].text
    finally:
        h.close()


def test_crab_run_runs_a_command_on_its_model_and_an_untrusted_projects_on_the_runs(crab_cmd, requests_sent, tmp_path):
    _write(tmp_path / "home" / "commands", "deep", "---\nmodel: big\n---\nThink hard about $ARGUMENTS.\n")
    work = _project(tmp_path)
    _write(work / ".crab" / "commands", "spend", "---\nmodel: scripted/big\n---\nSpend.\n")
    flags = ("run", "--provider", "scripted", "-m", "scripted")
    done = crab_cmd(*flags, "/deep the cache", cwd=work, script=[[{"text": "deep answer"}]])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "deep answer"
    assert "/deep runs on scripted/big; the session goes back to scripted/scripted after it" in done.stderr
    assert [r["model"] for r in requests_sent()] == ["big"]
    done = crab_cmd(*flags, "/spend", cwd=work, script=[[{"text": "cheap answer"}]])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "cheap answer"
    assert "its model: scripted/big is ignored, and it runs on scripted/scripted" in done.stderr
    assert [r["model"] for r in requests_sent()] == ["big", "scripted"]
    _write(tmp_path / "home" / "commands", "huge", "---\nmodel: huge\n---\nGo.\n")
    done = crab_cmd(*flags, "/huge", cwd=work, script=[[{"text": "never"}]])
    assert (done.returncode, "Traceback" in done.stderr) == (1, False), done.stderr
    [line] = [line for line in done.stderr.splitlines() if "/huge" in line]
    assert "/huge asks for the model 'huge', which is not configured" in line
    assert len(requests_sent()) == 2


class _Keyless(ScriptedProvider):
    def check(self, model: str) -> None:
        raise crab.ConfigError("other needs a key: crab auth other")


def test_a_provider_that_cannot_be_used_refuses_the_commands_prompt_in_one_line(crab_home):
    _write(crab_home / "commands", "deep", DEEP)
    other = _Keyless([[{"text": "never"}]], name="other", model="big")
    h = AgentHarness([[{"text": "from scripted"}]], plugins={"skills": SkillsPlugin(), "other": _Other(other)})
    try:
        assert h.run("/deep x").error == "/deep: the turn ended with an error (error)"
        [error] = [e.message for e in h.events_of(crab.events.ErrorEvent)]
        assert error == "prompt refused: /deep cannot run on other/big: other needs a key: crab auth other"
        assert other.requests == [] and h.requests == [] and _switches(h) == []
        assert h.session.messages == []  # refused: nothing recorded
        assert h.run("next").text == "from scripted"  # the plugin did not fail: prompts go through
    finally:
        h.close()


class _Hold:
    """A tool that holds its turn until the test releases it."""

    def __init__(self) -> None:
        self.holding = asyncio.Event()
        self.released = asyncio.Event()

    @crab.hookimpl
    def crab_tools(self, config: object) -> list[crab.Tool]:
        async def hold(ctx: crab.ToolContext) -> str:
            """Wait for the test."""
            self.holding.set()
            await self.released.wait()
            return "released"

        made: crab.Tool = crab.tool(name="hold")(hold)
        return [made]


def test_a_command_typed_during_another_turn_leaves_that_turn_on_the_sessions_model(crab_home):
    _write(crab_home / "commands", "deep", DEEP)
    tool = _Hold()
    h, other = _harness(
        [[{"tool": "hold", "args": {}}], [{"text": "first done"}]],
        [[{"text": "from big"}]],
        plugins={"hold": tool},
        config={"crab.permissions": "yolo"},
    )

    async def scenario() -> tuple[crab.steps.TurnOutcome, crab.steps.TurnOutcome]:
        first = asyncio.create_task(h.agent.handle_input(h.session, "first"))
        await asyncio.wait_for(tool.holding.wait(), 30)
        command = asyncio.create_task(h.agent.handle_input(h.session, "/deep x"))
        for _ in range(20):  # the command runs up to where its prompt waits behind the turn
            await asyncio.sleep(0)
        assert not command.done() and other.requests == []
        tool.released.set()
        return await first, await command

    try:
        first, command = h.run_async(scenario())
        assert (first.text, command.text) == ("first done", "from big")
        assert [r.model for r in h.requests] == ["scripted", "scripted"]  # the running turn, both calls
        assert [r.model for r in other.requests] == ["big"]
        assert _switches(h) == ["other/big", "mock/scripted"]
    finally:
        h.close()
