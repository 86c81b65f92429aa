"""The registries built from the loaded plugins' items (``crab._assembly.registries``): rebuilt when
a plugin registers or fails, so a failed plugin's items are used nowhere and a plugin given after
the registries were built (even under a failed one's name) is collected afresh."""

from __future__ import annotations

import types

import crab
import pytest
from crab._host.plugin_host import PluginHost
from crab.testing import build_host, make_config


def offering(*names: str) -> types.SimpleNamespace:
    tools = []
    for name in names:

        def run(text: str) -> str:
            """Echo."""
            return text

        run.__name__ = name
        tools.append(crab.tool(run))
    return types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: tools))


def test_a_plugin_failing_after_the_registries_were_built_loses_its_items():
    host = build_host({"p": offering("one"), "q": offering("two")})
    assert {"one", "two"} <= set(host.registry("tools"))
    host.fail("p", "it broke")
    tools = host.registry("tools")
    assert "one" not in tools and tools["two"].plugin == "q"


def test_a_plugin_given_again_under_a_failed_ones_name_is_collected_afresh():
    host = build_host({"p": offering("old")})
    assert host.registry("tools")["old"].plugin == "p"
    host.fail("p", "it broke")
    host.load_objects({"p": offering("new")})  # the same name, the same place in load order
    tools = host.registry("tools")
    assert "old" not in tools and tools["new"].plugin == "p"


def test_a_host_built_without_registries_says_where_they_come_from():
    host = PluginHost(make_config(), strict=False)  # as `crab plugins list` builds it: no registries
    with pytest.raises(AttributeError, match="registries"):
        host.registry("tools")


def test_tools_added_after_start_up_outlive_another_plugins_failure():
    # Before: any plugin failing mid-run rebuilt the tools table from the registration hooks alone,
    # so every tool added through add_tools (an MCP server's) was gone for the rest of the run.
    host = build_host({"mcp": offering(), "other": offering("two")})
    late = offering("late", "later").crab_tools(config=None)
    assert host.add_tools("mcp", late) == ["late", "later"]
    host.fail("other", "it broke")
    tools = host.registry("tools")
    assert list(tools)[-2:] == ["late", "later"] and tools["late"].plugin == "mcp" and "two" not in tools
    host.fail("mcp", "it broke too")
    assert "late" not in host.registry("tools")  # a failed plugin's late tools go with it
