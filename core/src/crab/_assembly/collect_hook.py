"""``crab.hooks.collect_hook``: a registration hook collected outside a run, for a plugin's CLI sub-command,
through the same dispatcher (``crab._host.collect``), so failures meet the hook's policy."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crab._host.collect import collect_from

if TYPE_CHECKING:
    from crab._contracts.config import Config


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
    ``CRAB_STRICT_PLUGINS=1`` a plugin failure raises ``PluginError``; ``ValueError`` when no loaded
    plugin declares ``hook`` (or it is one core collects itself).
    """
    from crab._assembly.root import assemble_host

    config, host = assemble_host(plugins=plugins)
    results = collect_from(host, hook, config)
    return HookResults(config, results, [*config.notices(), *(f.line for f in host.failures)])
