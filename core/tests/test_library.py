"""crab as a library (docs/library.md): building, running, streaming and the result of ``crab.Agent``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False}
"""No config file or environment layer: what a test (or a program wanting none) passes."""


@crab.tool
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def shout(text: str) -> str:
    """Say ``text`` loudly."""
    return text.upper()


class PricedProvider(ScriptedProvider):
    """A scripted provider whose model has prices, so the result carries a cost."""

    def models(self) -> list[crab.ModelInfo]:
        return [crab.ModelInfo(id="scripted", provider=self.name, input_price=2.0, output_price=10.0)]


def adding_script() -> list[list[dict[str, object]]]:
    return [
        [{"text": "Adding. "}, {"tool": "add", "args": {"a": 2, "b": 3}}, {"usage": {"input_tokens": 100}}],
        [{"text": "2 + 3 = 5."}, {"usage": {"input_tokens": 200, "output_tokens": 10}}],
    ]


def test_run_sync_ends_with_the_answer_tool_calls_usage_cost_and_session(crab_home: Path):
    provider = PricedProvider(adding_script())
    with crab.Agent(provider=provider, tools=[add], plugins=[], **QUIET) as agent:
        result = agent.run_sync("what is 2 + 3?")
    assert result.text == "2 + 3 = 5."
    assert result.stop == "end"
    assert result.ok
    assert result.error is None
    assert result.turns == 1
    assert [(c.name, dict(c.arguments), c.result, c.is_error) for c in result.tool_calls] == [
        ("add", {"a": 2, "b": 3}, "5", False)
    ]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (300, 10)
    assert result.usage.cost == pytest.approx((300 * 2.0 + 10 * 10.0) / 1_000_000)
    assert result.session_id
    assert [m.id for m in provider.models()] == ["scripted"]


def test_run_async_and_run_stream_give_the_events_renderers_get(crab_home: Path):
    seen: list[crab.events.Event] = []

    async def main() -> tuple[list[crab.events.Event], crab.RunResult]:
        provider = ScriptedProvider(adding_script())
        async with crab.Agent(provider=provider, tools=[add], plugins=[], listeners=[seen.append], **QUIET) as agent:
            run = agent.run_stream("what is 2 + 3?")
            streamed = [event async for event in run]
            return streamed, await run.result()

    streamed, result = asyncio.run(main())
    kinds = [type(e) for e in streamed]
    assert kinds[0] is crab.events.TurnStarted
    assert kinds[-1] is crab.events.TurnEnded
    for kind in (crab.events.TextDelta, crab.events.ToolCallEvent, crab.events.ToolResultEvent, crab.events.UsageEvent):
        assert kind in kinds
    # The very objects a listener (a renderer) received, in the same order.
    assert streamed == [e for e in seen if not isinstance(e, crab.events.NoticeEvent)]
    assert result.text == "2 + 3 = 5."
    assert "".join(e.text for e in streamed if isinstance(e, crab.events.TextDelta)) == "Adding. 2 + 3 = 5."


def test_run_stream_sync_iterates_with_a_plain_for(crab_home: Path):
    provider = ScriptedProvider(adding_script())
    with crab.Agent(provider=provider, tools=[add], plugins=[], **QUIET) as agent:
        run = agent.run_stream_sync("what is 2 + 3?")
        names = [e.name for e in run if isinstance(e, crab.events.ToolResultEvent)]
        result = run.result_sync()
    assert names == ["add"]
    assert result.text == "2 + 3 = 5."


def test_plain_functions_are_tools_beside_an_installed_plugin_chosen_by_name(crab_home: Path, tmp_path: Path):
    (tmp_path / "notes.txt").write_text("crab notes\n")
    provider = ScriptedProvider(
        [
            [{"tool": "shout", "args": {"text": "hi"}}, {"tool": "read", "args": {"path": "notes.txt"}}],
            [{"text": "done"}],
        ]
    )
    with crab.Agent(provider=provider, tools=[shout], plugins=["tools-basic"], workspace=tmp_path, **QUIET) as agent:
        result = agent.run_sync("go")
        names = agent.tool_names
    assert {"shout", "read", "write", "bash"} <= set(names)
    calls = {c.name: c for c in result.tool_calls}
    assert calls["shout"].result == "HI"
    assert "crab notes" in (calls["read"].result or "")
    offered = {t.name for t in provider.requests[0].tools}
    assert {"shout", "read"} <= offered


def test_a_program_listing_no_plugins_gets_only_its_own_tools_and_core(crab_home: Path):
    provider = ScriptedProvider([[{"text": "hello"}]])
    with crab.Agent(provider=provider, tools=[add], plugins=[], **QUIET) as agent:
        assert agent.run_sync("hi").text == "hello"
        records = agent._agent.host.records
    assert agent.tool_names == ["add"]
    assert [t.name for t in provider.requests[0].tools] == ["add"]
    # No installed plugin is even listed: discovery was not asked.
    assert {r.status for r in records.values()} == {"builtin", "loaded"}
    # The program's own plugins: its tools and the routes that give each run its session's events.
    assert sorted(name for name, r in records.items() if r.status == "loaded") == ["program-runs", "program-tools"]


def test_a_packaged_mock_script_runs_as_provider_slash_model(crab_home: Path, tmp_path: Path):
    (tmp_path / "README.md").write_text("# demo\n")
    with crab.Agent("mock/tour", plugins=["provider-mock", "tools-basic"], workspace=tmp_path, **QUIET) as agent:
        result = agent.run_sync("show me around")
        assert agent.model == "mock/tour"
    assert result.stop == "end"
    assert [c.name for c in result.tool_calls] == ["ls", "glob", "grep"]
    assert "scripted tour" in result.text


def test_nothing_is_printed_unless_a_renderer_is_asked_for(crab_home: Path, capfd: pytest.CaptureFixture[str]):
    with crab.Agent(provider=ScriptedProvider(adding_script()), tools=[add], plugins=[], **QUIET) as agent:
        agent.run_sync("what is 2 + 3?")
    assert capfd.readouterr() == ("", "")
    with crab.Agent(
        provider=ScriptedProvider(adding_script()), tools=[add], plugins=[], renderer="plain", **QUIET
    ) as agent:
        agent.run_sync("what is 2 + 3?")
    out, err = capfd.readouterr()
    assert "2 + 3 = 5." in out
    assert "add" in err


def test_two_agents_in_one_process_share_nothing(crab_home: Path):
    first = ScriptedProvider([[{"tool": "add", "args": {"a": 1, "b": 1}}], [{"text": "two"}]])
    second = ScriptedProvider([[{"tool": "shout", "args": {"text": "x"}}], [{"text": "X"}]])

    async def main() -> tuple[crab.RunResult, crab.RunResult]:
        async with (
            crab.Agent(
                provider=first, tools=[add], plugins=[], settings={"crab.system_prompt_append": "ONE"}, **QUIET
            ) as a,
            crab.Agent(
                provider=second, tools=[shout], plugins=[], settings={"crab.system_prompt_append": "TWO"}, **QUIET
            ) as b,
        ):
            return await asyncio.gather(a.run("first"), b.run("second"))

    one, two = asyncio.run(main())
    assert (one.text, two.text) == ("two", "X")
    assert [c.result for c in one.tool_calls] == ["2"]
    assert [c.result for c in two.tool_calls] == ["X"]
    assert [t.name for t in first.requests[0].tools] == ["add"]
    assert [t.name for t in second.requests[0].tools] == ["shout"]
    assert "ONE" in first.requests[0].system and "TWO" not in first.requests[0].system
    assert "TWO" in second.requests[0].system and "ONE" not in second.requests[0].system
    assert one.session_id != two.session_id


def test_each_config_layer_can_be_switched_off(crab_home: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    (crab_home / "config.toml").write_text('[crab]\nsystem_prompt_append = "FROM USER FILE"\n')
    project = tmp_path / "project"
    (project / ".crab").mkdir(parents=True)
    (project / ".crab" / "config.toml").write_text("[crab]\nmax_iterations = 7\n")
    monkeypatch.setenv("CRAB_TOOL_TIMEOUT", "9")

    def config(**layers: bool) -> crab.Config:
        with crab.Agent(provider=ScriptedProvider([]), plugins=[], workspace=project, **layers) as agent:
            return agent.config

    every = config()
    assert every.get("crab.system_prompt_append") == "FROM USER FILE"
    assert every.get("crab.max_iterations") == 7
    assert every.get("crab.tool_timeout") == 9.0
    assert config(user_config=False).get("crab.system_prompt_append") is None
    assert config(project_config=False).get("crab.max_iterations") == 25
    assert config(environment=False).get("crab.tool_timeout") == 120.0
    # The program's own settings come last, over every layer.
    with crab.Agent(
        provider=ScriptedProvider([]), plugins=[], workspace=project, settings={"crab.max_iterations": 3}
    ) as agent:
        assert agent.config.get("crab.max_iterations") == 3


def test_an_untrusted_project_cannot_widen_permissions_for_a_program(crab_home: Path, tmp_path: Path):
    project = tmp_path / "project"
    (project / ".crab").mkdir(parents=True)
    (project / ".crab" / "config.toml").write_text('[crab]\npermissions = "yolo"\n')
    with crab.Agent(provider=ScriptedProvider([]), plugins=[], workspace=project, environment=False) as agent:
        assert agent.config.get("crab.permissions") == "ask"


def test_setup_errors_are_typed_crab_errors(crab_home: Path):
    with pytest.raises(crab.ConfigError, match="no provider named 'nope'"):
        crab.Agent(provider="nope", plugins=[], **QUIET)
    with pytest.raises(crab.ConfigError, match="no provider plugin is loaded"):
        crab.Agent(plugins=[], **QUIET)
    with pytest.raises(crab.PluginError, match="no-such-plugin"):
        crab.Agent(provider=ScriptedProvider([]), plugins=["no-such-plugin"], **QUIET)
    with pytest.raises(crab.UsageError, match="permissions must be one of"):
        crab.Agent(provider=ScriptedProvider([]), plugins=[], permissions="sometimes", **QUIET)  # type: ignore[arg-type]
    with pytest.raises(crab.UsageError, match="docstring"):
        crab.Agent(provider=ScriptedProvider([]), plugins=[], tools=[lambda x: x], **QUIET)
    with pytest.raises(crab.UsageError, match="list of names"):
        crab.Agent(provider=ScriptedProvider([]), plugins="tools-basic", **QUIET)  # type: ignore[arg-type]
    with pytest.raises(crab.InvalidValue, match="max_iterations"):
        crab.Agent(provider=ScriptedProvider([]), plugins=[], settings={"crab.max_iterations": 0}, **QUIET)


def test_an_agent_runs_on_one_event_loop(crab_home: Path):
    agent = crab.Agent(provider=ScriptedProvider([[{"text": "a"}], [{"text": "b"}]]), plugins=[], **QUIET)
    assert agent.run_sync("one").text == "a"

    async def elsewhere() -> None:
        await agent.run("two")

    with pytest.raises(crab.UsageError, match="another event loop"):
        asyncio.run(elsewhere())
    agent.close()
    with pytest.raises(crab.UsageError, match="closed"):
        agent.run_sync("three")


def test_a_command_as_the_prompt_runs_the_command(crab_home: Path):
    with crab.Agent(provider=ScriptedProvider([]), plugins=[], **QUIET) as agent:
        run = agent.run_stream_sync("/help")
        outputs = [e for e in run if isinstance(e, crab.events.CommandOutput)]
        result = run.result_sync()
    assert result.stop == "command"
    assert result.ok
    assert outputs and "/help" in outputs[0].text


def test_sync_methods_inside_a_running_event_loop_say_what_to_do(crab_home: Path):
    agent = crab.Agent(provider=ScriptedProvider([[{"text": "a"}]]), plugins=[], **QUIET)

    async def inside() -> None:
        with pytest.raises(crab.UsageError, match="inside a running event loop"):
            agent.run_sync("hi")
        assert (await agent.run("hi")).text == "a"
        await agent.aclose()

    asyncio.run(inside())


class BrokenPrompt:
    """An in-process plugin whose system prompt part raises."""

    @crab.hookimpl
    def crab_system_prompt(self, workspace: Path, session_id: str, config: crab.Config) -> list[str]:
        raise RuntimeError("broken prompt")


def test_a_plugin_failing_during_a_run_is_a_notice_or_under_strict_mode_a_plugin_error(
    crab_home: Path, monkeypatch: pytest.MonkeyPatch
):
    def agent() -> crab.Agent:
        return crab.Agent(
            provider=ScriptedProvider([[{"text": "hi"}]]),
            plugins=[],
            plugin_objects={"broken": BrokenPrompt()},
            user_config=False,
            project_config=False,
        )

    with agent() as lenient:
        run = lenient.run_stream_sync("x")
        notices = [e.message for e in run if isinstance(e, crab.events.NoticeEvent)]
        assert run.result_sync().text == "hi"
    assert any("plugin broken failed" in line for line in notices)
    monkeypatch.setenv("CRAB_STRICT_PLUGINS", "1")
    with agent() as strict, pytest.raises(crab.PluginError, match="plugin broken failed"):
        strict.run_sync("x")
