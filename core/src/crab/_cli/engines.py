"""The turn engines the loaded plugins offer (``crab_turn_engines``), found by name for ``crab run
--engine`` and ``[serve] engine``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from crab._contracts.errors import CrabError, UsageError

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._host.plugin_host import PluginHost

Engine = Callable[..., Awaitable[Any]]


def turn_engine(host: PluginHost, config: Config, name: str, error: type[CrabError] = UsageError) -> Engine:
    """The turn engine ``name`` the loaded plugins offer; ``error`` (exit 2) naming those available
    when none is called that. A name two plugins offer is the first's."""
    engines: dict[str, Engine] = {}
    for _plugin, offered in host.dispatch.collect("crab_turn_engines", config=config):
        if not isinstance(offered, Mapping):
            continue  # None: this plugin offers none here
        for key, engine in offered.items():
            if isinstance(key, str) and callable(engine):
                engines.setdefault(key, engine)
    if name in engines:
        return engines[name]
    available = ", ".join(sorted(engines)) if engines else "none (no loaded plugin offers one)"
    raise error(f"no turn engine {name!r}: the engines available are {available}")
