"""A plugin named like one of core's built-ins (the permission gate, the loop guard) cannot replace it.

Before: registering the newcomer failed on the taken name, and marking it failed unregistered the
plugin holding that name, so an installed package whose entry point is named ``permissions``
switched the permission gate off (a write ran with nobody asked).
"""

from __future__ import annotations

from importlib.metadata import EntryPoint

import crab
import pytest
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
    host.load_entry_points([EntryPoint("permissions", "builtins:object", "crab.plugins")], cli=["permissions"])
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
