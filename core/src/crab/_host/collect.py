"""Registration hooks that one plugin collects from the others (``AgentHandle.collect`` in a run,
``crab.hooks.collect_hook`` in a CLI sub-command), called through the run's dispatcher so each meets its
policy (docs/hooks.md#hooks-a-plugin-declares)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._host.plugin_host import PluginHost

CORE_COLLECTED = frozenset(
    {"crab_config_table", "crab_cli", "crab_tools", "crab_providers", "crab_stores"}
    | {"crab_renderers", "crab_commands", "crab_channels"}
)
"""Registration hooks core calls itself (with their own arguments and registries)."""


def collect_from(host: PluginHost, hook: str, config: Config) -> list[tuple[str, Any]]:
    """(plugin, value) for every plugin implementing ``hook`` that did not fail, in plugin order;
    ``ValueError`` unless ``hook`` is a declared registration hook left for plugins to collect."""
    policies = host.dispatch.policies
    collectable = sorted(h for h, p in policies.items() if p.category == "registration" and h not in CORE_COLLECTED)
    if hook not in collectable:
        offer = ", ".join(collectable) if collectable else "none (no loaded plugin declares one)"
        raise ValueError(f"{hook!r} cannot be collected by a plugin; these can: {offer}")
    return host.dispatch.collect(hook, config=config)
