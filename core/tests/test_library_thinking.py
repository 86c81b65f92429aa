"""Thinking effort, one setting for every provider (docs/library.md#thinking): ``[crab] thinking``,
``/thinking`` (alias ``/effort``) for a session and ``run(..., thinking=)`` put the level on each request as
``options["thinking"]``; a provider without a thinking control is named once and gets none."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False, "plugins": []}


class Thinker(ScriptedProvider):
    def thinks(self, model: str) -> bool:
        return True


def levels(provider: ScriptedProvider) -> list[object]:
    return [request.options.get("thinking") for request in provider.requests]


def test_the_config_a_session_command_and_a_run_set_the_level(crab_home: Path):
    provider = Thinker([[{"text": "a"}]], loop=True)
    with crab.Agent(provider=provider, settings={"crab.thinking": "low"}, **QUIET) as agent:
        session = agent.run_sync("one").session_id
        agent.run_sync("two", session=session, thinking="high")
        assert "thinking: high from the next request on" in agent.run_sync("/thinking high", session=session).text
        agent.run_sync("three", session=session)
        agent.run_sync("four")  # another session: the config's level
        shown = agent.run_sync("/thinking", session=session).text
        assert agent.run_sync("/effort", session=session).text == shown  # the alias, one command
    assert levels(provider) == ["low", "high", "high", "low"]
    assert shown.startswith("thinking: high")
    first = provider.requests[0]
    assert all((r.system, r.tools) == (first.system, first.tools) for r in provider.requests)


def test_the_agent_takes_a_level_for_every_run(crab_home: Path):
    provider = Thinker([[{"text": "a"}]], loop=True)
    with crab.Agent(provider=provider, thinking="medium", **QUIET) as agent:
        agent.run_sync("one")
        agent.run_sync("two", thinking="off")
    assert levels(provider) == ["medium", "off"]


def test_without_a_level_nothing_is_sent(crab_home: Path):
    provider = Thinker([[{"text": "a"}]])
    with crab.Agent(provider=provider, **QUIET) as agent:
        agent.run_sync("one")
    assert levels(provider) == [None]


def test_a_provider_without_thinking_is_named_once_and_sent_no_level(crab_home: Path):
    provider = ScriptedProvider([[{"text": "a"}]], loop=True)
    notices: list[str] = []

    def listen(event: crab.events.Event) -> None:
        if isinstance(event, crab.events.NoticeEvent):
            notices.append(event.message)

    with crab.Agent(provider=provider, listeners=[listen], **QUIET) as agent:
        agent.run_sync("one", thinking="high")
        agent.run_sync("two", thinking="medium")
    assert levels(provider) == [None, None]
    assert notices == ["mock/scripted has no thinking control: thinking = high is ignored for it"]


def test_a_bad_level_is_a_usage_error(crab_home: Path):
    with crab.Agent(provider=Thinker([[{"text": "a"}]]), **QUIET) as agent:
        with pytest.raises(crab.UsageError, match="thinking takes one of off, low, medium, high"):
            agent.run_stream("x", thinking="max")  # type: ignore[arg-type]
        assert agent.run_sync("/thinking max").text.startswith("/thinking takes one of")
    with pytest.raises(crab.ConfigError):
        crab.Agent(provider=Thinker([]), settings={"crab.thinking": "max"}, **QUIET)


def test_the_command_line_takes_a_level(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    script = tmp_path / "script.json"
    script.write_text('{"replies": [[{"text": "fine"}]]}')
    done = crab_run(["run", "-m", f"scripted/{script}", "--thinking", "high", "hi"], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "has no thinking control: thinking = high is ignored for it" in done.stderr
    bad = crab_run(["run", "-m", f"scripted/{script}", "--thinking", "max", "hi"], env, cwd=tmp_path)
    assert bad.returncode == 2 and "thinking" in bad.stderr and "Traceback" not in bad.stderr
