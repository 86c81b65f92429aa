"""API 1.x compatibility, in one place: module paths and names that moved keep importing, with a
``DeprecationWarning`` naming the new home (crab 2.0 drops them)."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Mapping
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
    "crab.loop.compaction": "crab._loop.compaction",
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
    "crab.schema": "crab._values.tool_schema",
    "crab.storage": "crab._contracts.storage",
    "crab.toolbox": "crab._assembly.toolbox",
    "crab.tools": "crab._contracts.tools",
    "crab.truncate": "crab._values.truncate",
    "crab.trust": "crab._config.trust",
    "crab.watchdog": "crab._system.watchdog",
    # moved to kits (their own distributions)
    "crab.provider_kit": "crab_provider_kit",
    "crab.http_stream": "crab_provider_kit._http_stream",
    "crab.sse": "crab_provider_kit._sse",
    "crab.retry": "crab_provider_kit._retry",
    "crab.extra_body": "crab_provider_kit._extra_body",
    "crab.store_rows": "crab_sql_kit._rows",
    "crab.jobs": "crab_jobs_kit",
}
"""Old module path → the module that holds its code now. Before crab 0.2 every module sat flat
under ``crab``; those were private, but plugins' tests imported some of them."""

KITS: dict[str, str] = {
    "crab_provider_kit": "crab-provider-kit",
    "crab_sql_kit": "crab-sql-kit",
    "crab_jobs_kit": "crab-jobs-kit",
}
"""A kit's import package → its distribution: what a family of plugins shares, outside core. A
moved module or name imports from its kit while it is installed, and says in one line which kit
to install when it is not."""

_SQL_NAMES = ("SESSION_COLUMNS", "SessionTotals", "StoredPayload", "decode_payload", "entry_from_row", "entry_usage")
MOVED_NAMES: dict[str, str] = dict.fromkeys(
    (*_SQL_NAMES, "payload_json", "session_from_row", "session_totals", "store_payload", "utf8_encodable"),
    "crab_sql_kit",
)
"""``crab`` names of API 1.2 that moved to a kit → that kit's package (same name there)."""

_POSTGRES_DSN = "CRAB_POSTGRES_DSN"  # read here only for the deprecated name; crab-store-postgres reads its own


def postgres_dsn(env: Mapping[str, str] | None = None) -> str | None:
    """API 1.2's ``crab.postgres_dsn``: ``CRAB_POSTGRES_DSN`` stripped, or None when unset or blank.

    crab-store-postgres, the one plugin that uses the variable, reads it itself now.
    """
    import os

    value = (os.environ if env is None else env).get(_POSTGRES_DSN, "").strip()
    return value or None


def _kit_missing(old: str, target: str) -> ModuleNotFoundError | None:
    """The one-line error for ``old`` when the kit ``target`` lives in is not installed, else None."""
    kit = target.partition(".")[0]
    distribution = KITS.get(kit)
    if distribution is None:
        return None
    import importlib.util

    if importlib.util.find_spec(kit) is not None:
        return None
    return ModuleNotFoundError(
        f"{old} moved to the kit {distribution} (import {kit}), which is not installed: pip install {distribution}",
        name=kit,
    )


def _new_home(old: str, target: str) -> str:
    kit = target.partition(".")[0]
    if kit == target:
        return f"{old} moved to {kit} (the kit {KITS[kit]}); import it from there"
    if kit in KITS:
        return f"{old} moved to {target} (the kit {KITS[kit]}); import its public names from {kit}"
    return f"{old} moved to {target} (private); import public names from crab, crab.processes or crab.testing"


def moved_name(name: str, namespace: dict[str, object]) -> object:
    """``crab.<name>`` for an API 1.x name that moved to a kit, with a ``DeprecationWarning``.

    ``AttributeError`` for a name crab never had; ``ModuleNotFoundError`` naming the kit to install
    when it is missing. ``namespace`` is ``crab``'s, for the module name in messages.
    """
    owner = str(namespace.get("__name__", "crab"))
    if name == "postgres_dsn":
        warnings.warn(
            "crab.postgres_dsn is deprecated: crab-store-postgres reads CRAB_POSTGRES_DSN itself",
            DeprecationWarning,
            stacklevel=3,
        )
        namespace[name] = postgres_dsn
        return postgres_dsn
    kit = MOVED_NAMES.get(name)
    if kit is None:
        raise AttributeError(f"module {owner!r} has no attribute {name!r}")
    missing = _kit_missing(f"{owner}.{name}", kit)
    if missing is not None:
        raise missing
    warnings.warn(_new_home(f"{owner}.{name}", kit), DeprecationWarning, stacklevel=3)
    value = getattr(importlib.import_module(kit), name)
    namespace[name] = value  # warned once; ``from crab import X`` looks a name up twice
    return value


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
        self.own_spec: ModuleSpec | None = None

    def create_module(self, spec: ModuleSpec) -> ModuleType:
        module = importlib.import_module(self.target)
        if spec.name in _OLD_PACKAGES and not hasattr(module, "__path__"):
            return _package_proxy(spec.name, module)
        self.own_spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The target module ran when it was imported. importlib has just set the old path's spec
        # on it, though, which would leave crab._cli with the spec ``crab.cli`` and no search
        # locations (importlib.resources: "not a package"): give the module its own back.
        if self.own_spec is not None and module.__name__ == self.target:
            module.__spec__ = self.own_spec


def _under_moved_package(fullname: str) -> str | None:
    """``crab._cli.app`` for ``crab.cli.app``: a module of a moved package that ``MOVED`` does not
    list. Left to the path finder, it would be found again through the package's ``__path__`` and
    run a second time as a module of its own, with a second copy of every class in it."""
    parent, _, leaf = fullname.rpartition(".")
    if parent not in _OLD_PACKAGES or not leaf:
        return None
    new = f"{MOVED[parent]}.{leaf}"
    import importlib.util

    try:
        found = importlib.util.find_spec(new)
    except ImportError:  # the new parent is a module, not a package (crab.render)
        return None
    return new if found is not None else None


class _MovedModuleFinder:
    """Finds an old ``crab.*`` path and hands back the module it moved to."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> ModuleSpec | None:
        new = MOVED.get(fullname) or _under_moved_package(fullname)
        if new is None:
            return None
        missing = _kit_missing(fullname, new)
        if missing is not None:
            raise missing
        warnings.warn(_new_home(fullname, new), DeprecationWarning, stacklevel=2)
        return ModuleSpec(fullname, cast("Loader", _MovedModuleLoader(new)))


def install() -> None:
    """Put the finder first on ``sys.meta_path``, once (``crab/__init__.py`` calls it): first, so an
    old package path (``crab.loop``) never lets the path finder load its modules a second time."""
    if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedModuleFinder())
