"""crab.Agent against a careless program or a session id from outside: each a clear UsageError."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False}


def where(ctx: crab.ToolContext) -> str:
    """The folder this tool runs in."""
    return str(ctx.workspace)


@pytest.mark.parametrize("name", ["program-tools", "program-runs", "crab-config", "permissions", "loop-guard"])
def test_a_plugin_object_may_not_take_a_name_core_gives_its_own(crab_home: Path, name: str):
    # program-tools and program-runs were silently replaced by the agent's own; an object named
    # crab-config kept the config notices (an untrusted project's ignored keys) from being shown.
    with pytest.raises(crab.UsageError, match=name):
        crab.Agent(provider=ScriptedProvider([]), plugins=[], tools=[where], plugin_objects={name: object()}, **QUIET)


def test_a_session_of_another_workspace_is_not_continued_there(crab_home: Path, tmp_path: Path):
    # Before: the agent made for workspace B ran its tools in A's folder, with B's config and trust.
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    store = {
        "store": "sqlite",
        "plugins": ["store-sqlite"],
        "settings": {"plugins.store-sqlite.path": str(tmp_path / "s.db")},
    }
    with crab.Agent(provider=ScriptedProvider([[{"text": "hi"}]]), workspace=a, **store, **QUIET) as first:
        session = first.run_sync("hello").session_id
    script = [[{"tool": "where", "args": {}}], [{"text": "ok"}]]
    second = crab.Agent(provider=ScriptedProvider(script), workspace=b, tools=[where], **store, **QUIET)
    with second, pytest.raises(crab.UsageError, match="another workspace"):
        second.run_sync("where are you?", session=session)
    with crab.Agent(provider=ScriptedProvider(script), workspace=a, tools=[where], **store, **QUIET) as again:
        assert again.run_sync("where are you?", session=session).tool_calls[0].result == str(a)


def test_a_relative_workspace_is_made_absolute(crab_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # Stored as "rel", a session would be resumed wherever the next process happened to run.
    (tmp_path / "rel").mkdir()
    monkeypatch.chdir(tmp_path)
    with crab.Agent(provider=ScriptedProvider([]), plugins=[], workspace="rel", **QUIET) as agent:
        assert agent.workspace == (tmp_path / "rel").resolve()


def test_a_setup_error_masks_a_secret_the_program_passed_by_mistake(crab_home: Path, monkeypatch: pytest.MonkeyPatch):
    # The CLI masks the line it prints; a program prints the exception itself (or its traceback).
    key = "sk-proj-abcdefghijklmnopqrstuvwx0123456789"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(crab.InvalidValue) as raised:
        crab.Agent(provider=ScriptedProvider([]), plugins=[], settings={"crab.max_iterations": key})
    assert key not in str(raised.value) and "crab.max_iterations" in str(raised.value)


def test_an_installed_plugin_named_like_the_agents_own_cannot_stall_a_run(
    crab_home: Path, monkeypatch: pytest.MonkeyPatch
):
    # An entry point named program-runs took the name of the agent's run routing, whose
    # registration then failed: the run's events went nowhere and result() waited forever.
    import asyncio
    from importlib.metadata import EntryPoint

    from crab._host import plugin_host

    fake = [EntryPoint(n, "builtins:object", "crab") for n in ("program-runs", "program-tools", "crab-config")]
    monkeypatch.setattr(plugin_host, "discover_entry_points", lambda: fake)

    async def main() -> crab.RunResult:
        async with crab.Agent(
            provider=ScriptedProvider([[{"tool": "where", "args": {}}], [{"text": "done"}]]),
            plugins=["program-runs", "program-tools", "crab-config"],
            tools=[where],
            **QUIET,
        ) as agent:
            return await asyncio.wait_for(agent.run("go"), 10)

    result = asyncio.run(main())
    assert result.text == "done" and result.tool_calls[0].result == str(Path.cwd())
