"""Registration hooks that one plugin collects from the others (``crab_skill_dirs``), called through core.

Core collects most registration hooks itself (tools, providers, commands…). A few exist so that a
plugin can gather what other plugins offer; the call still goes through the run's dispatcher, so
a failing implementation meets the hook's policy in ``crab.dispatch.HOOKS`` and is reported once,
like any other. ``AgentHandle.collect`` calls one during a run; ``collect_hook`` does it for a
plugin's CLI sub-command, which has no agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crab.dispatch import HOOKS

if TYPE_CHECKING:
    from crab.config import Config
    from crab.plugins import PluginHost

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


@dataclass(frozen=True, slots=True)
class HookResults:
    """What ``collect_hook`` found: the checked config, each plugin's answer, and lines to show.

    ``warnings`` holds the config notices (trust-only keys an untrusted project set, unknown
    keys) and every plugin failure line, each once; print them on stderr as ``warning:`` lines.
    """

    config: Config
    results: list[tuple[str, Any]]
    warnings: list[str] = field(default_factory=list)


def collect_hook(hook: str, plugins: str | None = None) -> HookResults:
    """Load the config and the enabled plugins as a command does and collect ``hook`` from them.

    For CLI sub-commands (added with ``crab_cli``) that need what other plugins register.
    ``plugins`` is a ``--plugins`` list. A bad config raises ``ConfigError``; with
    ``CRAB_STRICT_PLUGINS=1`` a plugin failure raises ``PluginError``.
    """
    from crab.cli.runtime import build_host, load_cli_config

    check_collectable(hook)
    config = load_cli_config()
    host = build_host(config, plugins)
    results = collect_from(host, hook, config)
    return HookResults(config, results, [*config.notices(), *(f.line for f in host.failures)])
