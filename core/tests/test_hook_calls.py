"""Registration hooks a plugin collects from the others (``crab_skill_dirs``): through the run's dispatcher."""

from __future__ import annotations

import types
from pathlib import Path

import crab
import pytest
from crab._host.collect import collect_from


def _offering(path: Path) -> types.SimpleNamespace:
    @crab.hookimpl
    def crab_skill_dirs(config: crab.Config) -> list[Path]:
        return [path]

    return types.SimpleNamespace(crab_skill_dirs=crab_skill_dirs)


def _broken() -> types.SimpleNamespace:
    @crab.hookimpl
    def crab_skill_dirs(config: crab.Config) -> list[Path]:
        raise RuntimeError("no skills today")

    return types.SimpleNamespace(crab_skill_dirs=crab_skill_dirs)


def test_the_handle_collects_every_plugins_answer_in_plugin_order(crab_agent, tmp_path):
    harness = crab_agent(plugins={"first": _offering(tmp_path / "a"), "second": _offering(tmp_path / "b")})
    handle = crab.AgentHandle(harness.agent)
    assert handle.collect("crab_skill_dirs") == [("first", [tmp_path / "a"]), ("second", [tmp_path / "b"])]


def test_a_failing_implementation_fails_its_plugin_once(crab_agent, tmp_path):
    harness = crab_agent(plugins={"good": _offering(tmp_path), "bad": _broken()})
    handle = crab.AgentHandle(harness.agent)
    assert handle.collect("crab_skill_dirs") == [("good", [tmp_path])]
    status = {p.name: p for p in handle.plugins()}
    assert status["bad"].status == "failed"
    assert status["bad"].reason == "crab_skill_dirs raised RuntimeError: no skills today"
    assert handle.collect("crab_skill_dirs") == [("good", [tmp_path])]  # unregistered: not called again


@pytest.mark.parametrize("hook", ["crab_tools", "crab_cli", "crab_system_prompt", "crab_nothing"])
def test_only_hooks_left_for_plugins_can_be_collected(crab_agent, hook):
    harness = crab_agent()
    with pytest.raises(ValueError, match="these can: crab_job_stores, crab_skill_dirs"):
        collect_from(harness.host, hook, harness.config)


def test_collect_hook_loads_config_and_plugins_as_a_command_does(crab_home):
    found = crab.collect_hook("crab_skill_dirs")
    assert isinstance(found, crab.HookResults)
    assert found.config.get("crab.permissions") is not None  # the checked config, defaults filled
    assert all(isinstance(name, str) for name, _ in found.results)
