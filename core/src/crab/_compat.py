"""API 1.x compatibility, in one place: module paths that moved keep importing, with a warning.

Before crab 0.2 every module sat flat under ``crab`` (``crab.tools``, ``crab.loop.agent``…). Those
were private, but plugins' tests imported some of them; each old path still imports the module
that now holds its code, once, with a ``DeprecationWarning`` naming the new home (crab 2.0 drops
them). Public names are unchanged: import them from ``crab``, ``crab.provider_kit`` or ``crab.testing``.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    from importlib.abc import Loader

MOVED: dict[str, str] = {
    "crab.apiversion": "crab._host.api_version",
    "crab.atomic": "crab._system.atomic",
    "crab.auth": "crab._secrets.keys",
    "crab.builtin": "crab._builtin.core_plugin",
    "crab.channel_host": "crab._loop.channel_host",
    "crab.channels": "crab._contracts.channels",
    "crab.cli": "crab._cli",
    "crab.cli.runtime": "crab._assembly.choosing",
    "crab.commands": "crab._contracts.commands",
    "crab.config": "crab._config.layers",
    "crab.config_tables": "crab._contracts.config_tables",
    "crab.core_commands": "crab._builtin.commands",
    "crab.dispatch": "crab._host.dispatch",
    "crab.entrypoints": "crab._host.entry_points",
    "crab.environ": "crab._config.environ",
    "crab.errors": "crab._contracts.errors",
    "crab.events": "crab._contracts.events",
    "crab.handles": "crab._contracts.handle",
    "crab.hook_calls": "crab._assembly.collect_hook",
    "crab.hookspecs": "crab._host.hookspecs",
    "crab.interception": "crab._contracts.interception",
    "crab.loop": "crab._loop",
    "crab.loop.agent": "crab._loop.agent",
    "crab.loop.budget": "crab._loop.budget",
    "crab.loop.compaction": "crab._builtin.compaction",
    "crab.loop.guard": "crab._builtin.loop_guard",
    "crab.loop.history": "crab._loop.history",
    "crab.loop.router": "crab._loop.router",
    "crab.loop.session": "crab._loop.session",
    "crab.loop.shell": "crab._loop.shell",
    "crab.loop.tool_runner": "crab._loop.tool_runner",
    "crab.loop.tool_view": "crab._builtin.tool_view",
    "crab.loop.turn": "crab._loop.turn",
    "crab.memory_store": "crab._builtin.memory_store",
    "crab.messages": "crab._contracts.messages",
    "crab.permissions": "crab._builtin.permission_gate",
    "crab.plugins": "crab._host.plugin_host",
    "crab.pricing": "crab._loop.pricing",
    "crab.prompt": "crab._builtin.prompt",
    "crab.providers": "crab._contracts.providers",
    "crab.redaction": "crab._secrets.redaction",
    "crab.render": "crab._contracts.renderers",
    "crab.render.jsonl": "crab._builtin.render_jsonl",
    "crab.render.plain": "crab._builtin.render_plain",
    "crab.schema": "crab._contracts.tool_schema",
    "crab.storage": "crab._contracts.storage",
    "crab.toolbox": "crab._assembly.toolbox",
    "crab.tools": "crab._contracts.tools",
    "crab.truncate": "crab._contracts.truncate",
    "crab.trust": "crab._config.trust",
    "crab.watchdog": "crab._system.watchdog",
}
"""Old module path → the module that holds its code now."""


_OLD_PACKAGES = frozenset({"crab.cli", "crab.loop", "crab.render"})
"""Old paths that were packages: their old submodules (``crab.render.plain``) must still import."""


def _package_proxy(name: str, module: ModuleType) -> ModuleType:
    """A package standing for ``module`` (``crab.render`` is the module ``crab._contracts.renderers``
    now): its names are the module's, and it has a ``__path__`` so old submodule paths resolve."""
    proxy = ModuleType(name, module.__doc__)
    proxy.__path__ = []
    proxy.__getattr__ = lambda attribute: getattr(module, attribute)  # type: ignore[method-assign]
    return proxy


class _MovedModuleLoader:
    """Hands back the already imported module an old path now names (a loader by protocol: no
    ``importlib.abc`` import, which would pull ``importlib.resources`` into every start-up)."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        if spec.name in _OLD_PACKAGES and not hasattr(module, "__path__"):
            return _package_proxy(spec.name, module)
        return module

    def exec_module(self, module: ModuleType) -> None:
        return None  # the target module ran when it was imported


class _MovedModuleFinder:
    """Finds an old ``crab.*`` path and hands back the module it moved to."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        warnings.warn(
            f"{fullname} moved to {new} (private); import public names from crab, crab.provider_kit or crab.testing",
            DeprecationWarning,
            stacklevel=2,
        )
        return ModuleSpec(fullname, cast("Loader", _MovedModuleLoader(new)))


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once (``crab/__init__.py`` calls it): first, so an
    old package path (``crab.loop``) never lets the path finder load its modules a second time."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
