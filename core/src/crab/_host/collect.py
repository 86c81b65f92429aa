"""Registration hooks that one plugin collects from the others (``crab_skill_dirs``), called through core.

Core collects most registration hooks itself (tools, providers, commands…). A few exist so that a
plugin can gather what other plugins offer; the call still goes through the run's dispatcher, so
a failing implementation meets the hook's policy in ``crab._host.dispatch.HOOKS`` and is reported once,
like any other. ``AgentHandle.collect`` calls one during a run; ``crab.collect_hook`` (``crab._assembly``) does
it for a plugin's CLI sub-command, which has no agent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crab._host.dispatch import HOOKS

if TYPE_CHECKING:
    from crab._config.layers import Config
    from crab._host.plugin_host import PluginHost

CORE_COLLECTED = frozenset(
    {"crab_config_table", "crab_cli", "crab_tools", "crab_providers", "crab_stores"}
    | {"crab_renderers", "crab_commands", "crab_channels"}
)
"""Registration hooks core calls itself (with their own arguments and registries)."""


def check_collectable(hook: str) -> None:
    """Raise ``ValueError`` unless ``hook`` is a registration hook left for plugins to collect."""
    policy = HOOKS.get(hook)
    if policy is None or policy.category != "registration" or hook in CORE_COLLECTED:
        collectable = sorted(h for h, p in HOOKS.items() if p.category == "registration" and h not in CORE_COLLECTED)
        raise ValueError(f"{hook!r} cannot be collected by a plugin; these can: {', '.join(collectable)}")


def collect_from(host: PluginHost, hook: str, config: Config) -> list[tuple[str, Any]]:
    """(plugin, value) for every plugin implementing ``hook`` that did not fail, in plugin order."""
    check_collectable(hook)
    return host.dispatch.collect(hook, config=config)
