"""Hooks a plugin declares (``CRAB_HOOKSPECS``) and collects from the others, through the run's dispatcher."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

import crab
import pytest
from crab._host.collect import collect_from
from crab.testing import build_host


class GatherSpecs:
    """What a gathering plugin (like crab-skills) declares."""

    @crab.hookspec
    def crab_gather_dirs(self, config: crab.Config) -> list[Path] | None:
        """Folders this plugin offers to the gatherer."""

    @crab.hookspec(on_failure="drop")
    def crab_gather_hint(self, config: crab.Config, topic: str) -> str | None:
        """A hint; a failing one is only dropped."""


def _gatherer() -> types.SimpleNamespace:
    return types.SimpleNamespace(CRAB_API=">=0.1,<0.2", CRAB_HOOKSPECS=GatherSpecs)


def _offering(path: Path) -> types.SimpleNamespace:
    @crab.hookimpl
    def crab_gather_dirs(config: crab.Config) -> list[Path]:
        return [path]

    return types.SimpleNamespace(crab_gather_dirs=crab_gather_dirs)


def _broken() -> types.SimpleNamespace:
    @crab.hookimpl
    def crab_gather_dirs(config: crab.Config) -> list[Path]:
        raise RuntimeError("no folders today")

    @crab.hookimpl
    def crab_gather_hint(topic: str) -> str:
        raise RuntimeError("no hint today")

    return types.SimpleNamespace(crab_gather_dirs=crab_gather_dirs, crab_gather_hint=crab_gather_hint)


def test_the_handle_collects_every_plugins_answer_in_plugin_order(crab_agent, tmp_path):
    # "a-first" implements the hook and loads before the plugin declaring it: order does not matter.
    plugins = {"a-first": _offering(tmp_path / "a"), "gatherer": _gatherer(), "second": _offering(tmp_path / "b")}
    harness = crab_agent(plugins=plugins)
    handle = harness.handle
    assert handle.collect("crab_gather_dirs") == [("a-first", [tmp_path / "a"]), ("second", [tmp_path / "b"])]
    assert harness.host.declarers["crab_gather_dirs"] == "plugin gatherer"


def test_a_failing_implementation_meets_the_policy_its_declarer_gave(crab_agent, tmp_path):
    harness = crab_agent(plugins={"gatherer": _gatherer(), "good": _offering(tmp_path), "bad": _broken()})
    host = harness.host
    assert host.dispatch.collect("crab_gather_hint", config=harness.config, topic="x") == []
    assert host.records["bad"].status == "loaded"  # on_failure="drop": only that implementation is lost
    assert host.records["bad"].faults == [
        "crab_gather_hint raised RuntimeError: no hint today (its crab_gather_hint is not called again in this run)"
    ]
    handle = harness.handle
    assert handle.collect("crab_gather_dirs") == [("good", [tmp_path])]
    status = {p.name: p for p in handle.plugins()}
    assert status["bad"].status == "failed"  # the default policy, like core's registration hooks
    assert status["bad"].reason == "crab_gather_dirs raised RuntimeError: no folders today"
    assert handle.collect("crab_gather_dirs") == [("good", [tmp_path])]  # unregistered: not called again


def test_an_implementation_of_a_hook_no_loaded_plugin_declares_is_kept_and_never_fails(tmp_path):
    # crab-store-postgres offers crab_job_stores whether or not crab-schedule is loaded.
    host = build_host({"offering": _offering(tmp_path)})
    assert host.records["offering"].status == "loaded"
    assert "crab_gather_dirs" in host.records["offering"].hooks
    assert host.failures == []
    with pytest.raises(ValueError, match="'crab_gather_dirs' cannot be collected by a plugin"):
        collect_from(host, "crab_gather_dirs", host.config)


def test_a_declaration_added_later_is_checked_against_earlier_implementations(tmp_path):
    @crab.hookimpl
    def crab_gather_dirs(config: crab.Config, extra: int) -> list[Path]:
        return [tmp_path]

    host = build_host({"early": types.SimpleNamespace(crab_gather_dirs=crab_gather_dirs)})
    host.load_objects({"gatherer": _gatherer()})
    assert host.records["early"].status == "failed"
    assert host.records["early"].reason == "its crab_gather_dirs takes extra, which the hook does not pass"
    assert host.records["gatherer"].status == "loaded"


@pytest.mark.parametrize(
    ("specs", "reason"),
    [
        (types.SimpleNamespace(), "CRAB_HOOKSPECS must be a class or module, not SimpleNamespace"),
        (type("Empty", (), {}), "CRAB_HOOKSPECS holds no function marked with @crab.hookspec"),
        (
            type("Tools", (), {"crab_tools": crab.hookspec(lambda self, config: None)}),
            "declares hook crab_tools, which core already declares; rename it",
        ),
        (
            type("Bare", (), {"gather": crab.hookspec(lambda self: None)}),
            "declares hook gather, whose name must start with crab_",
        ),
    ],
)
def test_a_declaration_that_cannot_be_added_fails_its_plugin(specs: Any, reason: str):
    host = build_host({"declarer": types.SimpleNamespace(CRAB_HOOKSPECS=specs)})
    assert (host.records["declarer"].status, host.records["declarer"].reason) == ("failed", reason)


def test_two_plugins_cannot_declare_one_hook():
    host = build_host({"one": _gatherer(), "two": _gatherer()})
    assert host.records["one"].status == "loaded"
    assert host.records["two"].reason == "declares hook crab_gather_dirs, which plugin one already declares; rename it"


def test_a_misspelt_core_hook_still_fails_its_plugin():
    plugin = types.SimpleNamespace(crab_tool=crab.hookimpl(lambda config: []))
    host = build_host({"typo": plugin})
    assert host.records["typo"].status == "failed"
    assert host.records["typo"].reason == "implements unknown hook crab_tool (misspelt crab_tools? see docs/hooks.md)"


def test_hookspec_refuses_an_unknown_policy():
    with pytest.raises(ValueError, match="on_failure must be 'fail-plugin' or 'drop'"):
        crab.hookspec(on_failure="ignore")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="category must be one of registration, context"):
        crab.hookspec(category="whenever")  # type: ignore[call-overload]


class RefusingSpecs:
    """What a plugin may not declare: core's interceptor policy (a hook core calls in a place of its own)."""

    @crab.hookspec(category="interception", on_failure="refuse", awaitable=True)
    def crab_gate_everything(self, call: Any) -> Any:
        """A would-be interceptor."""


def test_a_plugin_cannot_declare_a_hook_with_a_policy_only_core_hooks_have():
    plugin = types.SimpleNamespace(CRAB_API=">=0.1,<0.2", CRAB_HOOKSPECS=RefusingSpecs)
    host = build_host({"gate": plugin})
    assert host.records["gate"].status == "failed"
    assert [f.line for f in host.failures] == [
        "plugin gate failed: declares hook crab_gate_everything as interception/refuse, but a plugin's hooks "
        "are plain registration hooks: mark it @crab.hookspec or @crab.hookspec(on_failure='drop')"
    ]
    assert "crab_gate_everything" not in host.dispatch.policies


@pytest.mark.parametrize("hook", ["crab_tools", "crab_cli", "crab_system_prompt", "crab_nothing"])
def test_only_declared_hooks_left_for_plugins_can_be_collected(crab_agent, hook):
    harness = crab_agent(plugins={"gatherer": _gatherer()})
    with pytest.raises(ValueError, match="these can: crab_gather_dirs, crab_gather_hint"):
        collect_from(harness.host, hook, harness.config)


def test_collect_hook_loads_config_and_plugins_as_a_command_does(crab_home):
    with pytest.raises(ValueError, match="cannot be collected"):  # no plugin enabled here declares it
        crab.hooks.collect_hook("crab_gather_dirs", plugins="")


def test_a_declaration_pluggy_refuses_fails_that_plugin_not_the_host():
    # A function carrying a ``crab_spec`` that is not pluggy's options passed crab's checks, and
    # pluggy's ValueError then escaped build_host: a traceback for every command.
    class Specs:
        def crab_widgets(self) -> None: ...

    Specs.crab_widgets.crab_spec = True  # type: ignore[attr-defined]

    class Declarer:
        CRAB_HOOKSPECS = Specs

    host = build_host({"declarer": Declarer()})
    assert host.records["declarer"].status == "failed"
    assert "CRAB_HOOKSPECS" in (host.records["declarer"].reason or "")


class _Renamed:
    """A guard written with pluggy's ``specname``, under a name of its own."""

    @crab.hookimpl(specname="crab_before_tool_call")
    def guard(self, call: Any) -> crab.hooks.Deny:
        return crab.hooks.Deny("guarded")


def test_an_implementation_not_named_after_its_hook_fails_its_plugin():
    # crab finds implementations by their crab_ name only: a guard under another name (pluggy's
    # specname) would otherwise be silently never called, its tool calls unguarded.
    module = types.SimpleNamespace(tools=crab.hookimpl(specname="crab_tools")(lambda config: []))
    host = build_host({"guard": _Renamed(), "module": module})
    for name, attr in (("guard", "guard"), ("module", "tools")):
        assert host.records[name].status == "failed"
        assert host.records[name].reason == (
            f"its {attr} is marked @crab.hookimpl but not named after a hook, so crab would never call it: "
            "name it after the hook (crab_tools, …; specname is not read, see docs/hooks.md)"
        )
