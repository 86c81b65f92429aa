"""Finding, choosing, loading and isolating plugins, and the registries built from their hooks.

Plugins are entry points in group ``crab``; the entry-point name is the plugin's name. Entry
points are listed without importing them, and a plugin that is not enabled is never imported.
Every plugin ends with a status: ``loaded``, ``disabled``, ``failed`` (with a one-line reason),
``missing`` (enabled but not installed) or ``builtin``. A failing plugin is reported, never fatal,
unless ``CRAB_STRICT_PLUGINS=1``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

import pluggy

from crab import environ, hookspecs
from crab.apiversion import API_VERSION, check_range
from crab.errors import PluginError

if TYPE_CHECKING:
    from crab.config import Config
    from crab.entrypoints import EntryPoint

ENTRY_POINT_GROUP = "crab"
Status = Literal["loaded", "disabled", "failed", "missing", "builtin"]
Kind = Literal["tools", "providers", "stores", "renderers", "commands", "channels"]
KINDS: tuple[Kind, ...] = ("tools", "providers", "stores", "renderers", "commands", "channels")


@dataclass
class PluginRecord:
    """One plugin's identity and status; ``reason`` explains ``failed``, ``disabled`` or ``missing``."""

    name: str
    status: Status
    distribution: str | None = None
    version: str | None = None
    target: str | None = None
    reason: str | None = None
    hooks: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "distribution": self.distribution,
            "version": self.version,
            "target": self.target,
            "reason": self.reason,
            "hooks": self.hooks,
        }


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def discover_entry_points() -> list[EntryPoint]:
    """Installed plugins' entry points, listed from package metadata (nothing is imported)."""
    from crab.entrypoints import entry_points

    return entry_points(ENTRY_POINT_GROUP)


def parse_plugin_list(text: str) -> list[str]:
    """``"a, b"`` → ``["a", "b"]``; the empty string means no plugins."""
    return [part.strip() for part in text.split(",") if part.strip()]


def select_plugins(
    installed: Sequence[str],
    config: Config | None,
    cli: Sequence[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """Which plugins load, in which order, and why each other one does not.

    Precedence: ``--plugins`` on the command line, then ``CRAB_PLUGINS``, then ``[plugins]
    enabled`` (config order), else every installed plugin sorted by name; ``[plugins] disabled``
    then removes names from the config-based choice. Returns (names to load, {name: reason}).
    """
    from_env = environ.plugin_list(env)
    reasons: dict[str, str] = {}
    if cli is not None:
        chosen, source = list(cli), "--plugins"
    elif from_env is not None:
        chosen, source = parse_plugin_list(from_env), environ.PLUGINS
    else:
        enabled = config.get("plugins.enabled") if config else None
        disabled = set(config.get("plugins.disabled") or ()) if config else set()
        if enabled is not None:
            chosen, source = list(enabled), "[plugins] enabled"
        else:
            chosen, source = sorted(installed), ""
        for name in [n for n in chosen if n in disabled]:
            chosen.remove(name)
            reasons[name] = "disabled in config ([plugins] disabled)"
    seen: set[str] = set()
    ordered = [n for n in chosen if not (n in seen or seen.add(n))]  # type: ignore[func-returns-value]
    for name in installed:
        if name not in ordered and name not in reasons:
            reasons[name] = f"not listed in {source}" if source else "disabled"
    return ordered, reasons


class PluginHost:
    """Owns the pluggy manager, every plugin's status and the registries built from hooks.

    Hooks are called per plugin so one plugin's failure is attributed to it and isolated; the
    call order is load order (config order, else by name), honouring ``tryfirst``/``trylast``.
    """

    def __init__(self, config: Config, *, strict: bool | None = None) -> None:
        self.config = config
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records: dict[str, PluginRecord] = {}
        self.strict = environ.strict_plugins() if strict is None else strict
        self._order: dict[str, int] = {}
        self._contributions: dict[Kind, dict[str, list[Any]]] = {k: {} for k in KINDS}
        self._collected: set[Kind] = set()
        self._registries: dict[Kind, dict[str, Any]] = {}

    # --- loading --------------------------------------------------------------------------

    def add_builtin(self, name: str, plugin: object) -> None:
        """Register one of core's own plugins (always on, listed as ``builtin``)."""
        self._register(name, plugin, PluginRecord(name=name, status="builtin", distribution="crab-core"))

    def load_entry_points(
        self,
        entry_points: Sequence[EntryPoint] | None = None,
        cli: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        """Discover installed plugins, choose the enabled ones and import only those."""
        found = discover_entry_points() if entry_points is None else list(entry_points)
        by_name: dict[str, EntryPoint] = {}
        for ep in found:
            dist = getattr(ep.dist, "name", None) if getattr(ep, "dist", None) else None
            if ep.name in by_name:
                other = by_name[ep.name]
                other_dist = getattr(other.dist, "name", "?") if getattr(other, "dist", None) else "?"
                self._fail(
                    PluginRecord(name=ep.name, status="failed", distribution=dist, target=ep.value),
                    f"the name {ep.name!r} is also used by {other_dist}; uninstall one of them",
                )
                continue
            by_name[ep.name] = ep
        chosen, reasons = select_plugins(list(by_name), self.config, cli, env)
        for name, reason in reasons.items():
            if name in self.records:
                continue
            ep = by_name[name]
            dist = ep.dist
            self.records[name] = PluginRecord(
                name=name,
                status="disabled",
                distribution=dist.name if dist else None,
                version=dist.version if dist else None,
                target=ep.value,
                reason=reason,
            )
        for name in chosen:
            if name in self.records and self.records[name].status == "failed":
                continue
            if name not in by_name:
                self.records[name] = PluginRecord(
                    name=name, status="missing", reason=f"enabled but not installed (pip install crab-{name}?)"
                )
                if self.strict:
                    raise PluginError(f"plugin {name}: {self.records[name].reason}")
                continue
            self._load_one(by_name[name])

    def load_objects(self, plugins: Mapping[str, object]) -> None:
        """Register in-process plugin objects (modules, instances) as if they were installed."""
        for name, plugin in plugins.items():
            self._register(name, plugin, PluginRecord(name=name, status="loaded", target=repr(plugin)))

    def _load_one(self, ep: EntryPoint) -> None:
        dist = ep.dist
        record = PluginRecord(
            name=ep.name,
            status="loaded",
            distribution=dist.name if dist else None,
            version=dist.version if dist else None,
            target=ep.value,
        )
        try:
            plugin = ep.load()
        except (Exception, SystemExit) as exc:
            self._fail(record, f"import failed: {_one_line(exc)}")
            return
        if inspect.isclass(plugin):
            try:
                plugin = plugin()
            except Exception as exc:
                self._fail(record, f"could not create the plugin object: {_one_line(exc)}")
                return
        self._register(ep.name, plugin, record)

    def _register(self, name: str, plugin: object, record: PluginRecord) -> None:
        self.records[name] = record
        wanted = getattr(plugin, "CRAB_API", None)
        if wanted is not None:
            try:
                fits = check_range(str(wanted))
            except ValueError as exc:
                self._fail(record, f"CRAB_API: {exc}")
                return
            if not fits:
                self._fail(
                    record,
                    f"needs crab plugin API {wanted}, this crab has {API_VERSION}; "
                    "upgrade the plugin or crab-core so the versions fit",
                )
                return
        unknown = [
            n
            for n in dir(plugin)
            if n.startswith("crab_") and not hasattr(hookspecs, n) and hasattr(getattr(plugin, n, None), "crab_impl")
        ]
        if unknown:
            self._fail(record, f"implements unknown hook {unknown[0]} (misspelt? see crab.hookspecs)")
            return
        try:
            self.pm.register(plugin, name=name)
        except Exception as exc:
            self._fail(record, f"invalid hook implementation: {_one_line(exc)}")
            return
        self._order[name] = len(self._order)
        record.hooks = sorted(h.name for h in self.pm.get_hookcallers(plugin) or [])
        self._collected.clear()
        self._registries.clear()

    def _fail(self, record: PluginRecord, reason: str) -> None:
        record.status = "failed"
        record.reason = reason
        self.records[record.name] = record
        plugin = self.pm.get_plugin(record.name)
        if plugin is not None:
            self.pm.unregister(plugin, name=record.name)
        for contributions in self._contributions.values():
            contributions.pop(record.name, None)
        self._registries.clear()
        if self.strict:
            raise PluginError(f"plugin {record.name} failed: {reason}")

    def fail(self, name: str, reason: str) -> None:
        """Mark a loaded plugin failed at run time and stop calling it."""
        record = self.records.get(name)
        if record is not None and record.status in ("loaded", "builtin"):
            self._fail(record, reason)

    # --- calling hooks --------------------------------------------------------------------

    def implementations(self, hook: str) -> list[tuple[str, Callable[..., Any]]]:
        """(plugin name, function) for every implementation of ``hook``, in call order."""
        caller = getattr(self.pm.hook, hook)
        impls = [i for i in caller.get_hookimpls() if i.plugin_name in self._order]

        def key(impl: Any) -> tuple[int, int]:
            tier = 0 if impl.tryfirst else 2 if impl.trylast else 1
            return tier, self._order[impl.plugin_name]

        return [(i.plugin_name, i.function) for i in sorted(impls, key=key)]

    def call_each(self, hook: str, **kwargs: Any) -> Iterator[tuple[str, Any]]:
        """Call ``hook`` plugin by plugin; a raising plugin is marked failed and skipped."""
        for name, function in self.implementations(hook):
            try:
                yield name, function(**kwargs)
            except Exception as exc:
                self.fail(name, f"{hook} raised {_one_line(exc)}")

    # --- registries -----------------------------------------------------------------------

    def _collect(self, kind: Kind) -> None:
        if kind in self._collected:
            return
        expected = expected_type(kind)
        contributions: dict[str, list[Any]] = {}
        for name, result in self.call_each(f"crab_{kind}", config=self.config):
            if result is None:
                continue
            if isinstance(result, (str, bytes)) or not isinstance(result, (list, tuple)):
                self.fail(name, f"crab_{kind} returned {type(result).__name__}, expected a list of {expected.__name__}")
                continue
            bad = [item for item in result if not isinstance(item, expected)]
            if bad:
                self.fail(
                    name,
                    f"crab_{kind} returned a {type(bad[0]).__name__} in its list, expected {expected.__name__}",
                )
                continue
            contributions[name] = [tag_with_plugin(item, name) for item in result]
        self._contributions[kind] = contributions
        self._collected.add(kind)

    def collect_all(self) -> None:
        """Run every registration hook now, so statuses and conflicts are known."""
        for kind in KINDS:
            self.registry(kind)

    def registry(self, kind: Kind) -> dict[str, Any]:
        """Name → object for one kind; same names from two plugins fail the later one."""
        while kind not in self._registries:
            self._collect(kind)
            built = self._build(kind)
            if built is not None:
                self._registries[kind] = built
        return self._registries[kind]

    def _build(self, kind: Kind) -> dict[str, Any] | None:
        table: dict[str, Any] = {}
        owner: dict[str, str] = {}
        for plugin in sorted(self._contributions[kind], key=lambda n: self._order.get(n, 0)):
            if self.records.get(plugin) is None or self.records[plugin].status not in ("loaded", "builtin"):
                continue
            for item in self._contributions[kind][plugin]:
                name = item.name
                if name not in table:
                    table[name], owner[name] = item, plugin
                    continue
                first = table[name]
                if getattr(item, "override", False) and not getattr(first, "override", False):
                    table[name], owner[name] = item, plugin
                    continue
                if getattr(first, "override", False) and not getattr(item, "override", False):
                    continue
                noun = kind[:-1]
                self.fail(
                    plugin,
                    f"{noun} {name!r} is also registered by plugin {owner[name]!r}; disable one "
                    f"(crab plugins disable {plugin}) or set override=True on the one that should win",
                )
                return None
        return table

    # --- reporting ------------------------------------------------------------------------

    def problems(self) -> list[PluginRecord]:
        return [r for r in self.records.values() if r.status in ("failed", "missing")]


def expected_type(kind: Kind) -> type:
    """The class (or runtime-checkable protocol) a registration hook's items must be."""
    from crab.channels import Channel
    from crab.commands import Command
    from crab.providers import Provider
    from crab.render import RendererSpec
    from crab.storage import Store
    from crab.tools import Tool

    types_by_kind: dict[Kind, type] = {
        "tools": Tool,
        "providers": Provider,
        "stores": Store,
        "renderers": RendererSpec,
        "commands": Command,
        "channels": Channel,
    }
    return types_by_kind[kind]


def tag_with_plugin(item: Any, plugin: str) -> Any:
    """Record which plugin registered ``item`` (a copy for frozen dataclasses)."""
    if hasattr(item, "__dataclass_fields__") and "plugin" in item.__dataclass_fields__:
        try:
            item.plugin = plugin
        except (AttributeError, TypeError):
            return replace(item, plugin=plugin)
    return item
