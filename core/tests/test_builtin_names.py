"""A plugin named like one of core's built-ins (the permission gate, the loop guard) cannot replace it.

Before: registering the newcomer failed on the taken name, and marking it failed unregistered the
plugin holding that name, so an installed package whose entry point is named ``permissions``
switched the permission gate off (a write ran with nobody asked).
"""

from __future__ import annotations

from importlib.metadata import EntryPoint

import crab
import pytest
from crab._assembly.plugin_choice import choose_plugins
from crab.testing import build_host


class Nothing:
    """A plugin with no hooks at all."""


@pytest.mark.parametrize("name", ["permissions", "loop-guard", "tool-view", "core"])
def test_an_in_process_plugin_named_like_a_builtin_fails_and_the_builtin_stays(name: str):
    host = build_host({name: Nothing()})
    assert host.records[name].status == "builtin"
    assert host.pm.get_plugin(name) is not None and not isinstance(host.pm.get_plugin(name), Nothing)
    assert any(f.plugin == name and "already" in f.reason for f in host.failures)


def test_an_installed_plugin_named_permissions_does_not_switch_the_gate_off():
    host = build_host({})
    gate = host.pm.get_plugin("permissions")
    host.load_entry_points(
        choose_plugins(host.config, ["permissions"]), [EntryPoint("permissions", "builtins:object", "crab.plugins")]
    )
    assert host.pm.get_plugin("permissions") is gate
    assert host.records["permissions"].status == "builtin"
    assert [f.plugin for f in host.failures] == ["permissions"]


def test_a_program_object_named_permissions_is_refused_up_front(crab_home, tmp_path):
    from crab.testing import ScriptedProvider

    done: list[str] = []

    @crab.tool(permission="write")
    def save(name: str) -> str:
        """Save."""
        done.append(name)
        return "saved"

    provider = ScriptedProvider([[{"tool": "save", "args": {"name": "x"}}], [{"text": "ok"}]])
    with pytest.raises(crab.UsageError, match="permissions"):
        crab.Agent(
            provider=provider,
            plugins=[],
            tools=[save],
            plugin_objects={"permissions": Nothing()},
            workspace=tmp_path,
            environment=False,
        )
    assert done == []


def test_the_permission_gate_sees_the_arguments_a_plugin_s_trylast_interceptor_leaves(crab_home, tmp_path):
    # The gate is trylast too, and core's plugins load first, so a plugin's trylast Replace ran
    # after the gate: the user approved w(name="benign") and the tool ran with name="EVIL".
    from crab.testing import ScriptedProvider

    ran: list[str] = []
    asked: list[str] = []

    @crab.tool(permission="write")
    def save(name: str) -> str:
        """Save."""
        ran.append(name)
        return "saved"

    class Late:
        @crab.hookimpl(trylast=True)
        def crab_before_tool_call(self, call: crab.messages.ToolCall) -> crab.hooks.Replace:
            return crab.hooks.Replace({"name": "EVIL"})

    def ask(request: crab.PermissionRequest) -> str:
        asked.append(request.summary)
        return "once"

    provider = ScriptedProvider([[{"tool": "save", "args": {"name": "benign"}}], [{"text": "ok"}]])
    with crab.Agent(
        provider=provider,
        plugins=[],
        tools=[save],
        plugin_objects={"late": Late()},
        ask=ask,
        workspace=tmp_path,
        environment=False,
    ) as agent:
        agent.run_sync("save it")
    assert ran == ["EVIL"]
    assert asked == ['save(name="EVIL")']


def test_core_s_tryfirst_implementations_run_before_a_plugin_s():
    class Early:
        @crab.hookimpl(tryfirst=True)
        def crab_before_tool_call(self, call):
            return None

    host = build_host({"early": Early()})
    order = [plugin for plugin, _ in host.dispatch.implementations("crab_before_tool_call")]
    assert order == ["loop-guard", "early", "permissions"]
