"""The registries one agent uses (tools, providers, stores, renderers, commands, channels), built
from every loaded plugin's items: collected through the dispatcher, checked, tagged with their
plugin, a name two plugins register settled by ``crab._assembly.clashes``, tools added after
start-up kept in a canonical order.

Composition, not hosting (docs/architecture.md, "The kernel"): the host finds, loads and calls the
plugins; what one agent is made of from what they return is the composition root's, which attaches
a ``Registries`` to each host it builds (``choosing.build_host``). The loop reaches it through the
host it is given (``PluginHost.registry``), the host naming only its ``Registries`` Protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from crab._host.plugin_host import Kind

if TYPE_CHECKING:
    from crab._contracts.tools import Tool
    from crab._host.plugin_host import PluginHost

KINDS: tuple[Kind, ...] = ("tools", "providers", "stores", "renderers", "commands", "channels")


class Registries:
    """Name → item for each kind over ``host``'s loaded plugins, rebuilt when a plugin registers or
    fails: after a plugin registers every registration hook is collected again, one that failed has
    none of its items used anywhere in the run."""

    def __init__(self, host: PluginHost) -> None:
        self.host = host
        self._contributions: dict[Kind, dict[str, list[Any]]] = {k: {} for k in KINDS}
        self._tables: dict[Kind, dict[str, Any]] = {}
        self._collected_at: int | None = None
        """``host.registrations`` when the registration hooks were called; None: not collected yet."""
        self._seen = (host.registrations, len(host.order))
        self._late: set[str] = set()
        """Names of the tools ``add_tools`` added (``_place_late`` keeps their order canonical)."""

    def collect_all(self) -> None:
        """Run every registration hook (once), so statuses and conflicts are known before use.

        All kinds are collected before any registry is built, so a plugin that fails in one
        registration hook has none of its contributions used anywhere in the run.
        """
        now = (self.host.registrations, len(self.host.order))  # a failure shortens the order
        if self._seen != now:
            self._seen = now
            self._tables.clear()
        if self._collected_at == self.host.registrations:
            return
        self._collected_at = self.host.registrations  # a plugin added after collecting: collect again
        for kind in KINDS:
            self._collect(kind)
        for kind in KINDS:
            self.registry(kind)

    def _collect(self, kind: Kind) -> None:
        expected = expected_type(kind)
        hook = f"crab_{kind}"
        contributions: dict[str, list[Any]] = {}
        for name, result in self.host.dispatch.collect(hook, config=self.host.config):
            if result is None:
                continue
            if not isinstance(result, list | tuple):
                self.host.fail(name, f"{hook} returned {type(result).__name__}, expected a list of {expected.__name__}")
                continue
            bad = [item for item in result if not isinstance(item, expected)]
            if bad:
                self.host.fail(
                    name, f"{hook} returned a {type(bad[0]).__name__} in its list, expected {expected.__name__}"
                )
                continue
            contributions[name] = [tag_with_plugin(item, name) for item in result]
        self._contributions[kind] = contributions

    def registry(self, kind: Kind) -> dict[str, Any]:
        """Name → object for one kind (same names: see ``_build``)."""
        self.collect_all()
        if kind not in self._tables:
            self._tables[kind] = self._build(kind)
        return self._tables[kind]

    def _build(self, kind: Kind) -> dict[str, Any]:
        """Name → item over the plugins still loaded; a name two plugins offer is settled by
        ``crab._assembly.clashes`` (never by which one sorts first), each item left out reported once
        as a fault of its plugin."""
        from crab._assembly.clashes import build_registry, crab_own

        host, contributions = self.host, self._contributions[kind]
        order = sorted((n for n in contributions if n in host.order), key=host.order.__getitem__)
        records = host.records
        table, faults = build_registry(
            kind, contributions, order, host.ranks, lambda p: crab_own(getattr(records.get(p), "distribution", None))
        )
        for fault in faults:
            host.fault(fault.plugins[0], fault.reason, *fault.plugins[1:])  # one line for all who lost it
        return table

    def add_tools(self, plugin: str, tools: Sequence[Tool]) -> list[str]:
        """Add tools that ``plugin`` learned of after start-up (MCP servers, say) to the live registry.

        Each is tagged with ``plugin`` as if ``crab_tools`` had returned it. A name already taken
        is left out and reported once as a fault of ``plugin`` (as ``_build`` does); nothing is
        added for a plugin that is not loaded or has failed. Returns the names added.
        """
        from crab._contracts.tools import Tool

        record = self.host.records.get(plugin)
        if plugin not in self.host.order or record is None or record.status == "failed":
            return []
        table = self.registry("tools")
        added: list[str] = []
        for item in tools:
            if not isinstance(item, Tool):
                self.host.fault(plugin, f"add_tools was given a {type(item).__name__}, expected a Tool")
                continue
            if item.name in table:
                owner = table[item.name].plugin or "another plugin"
                self.host.fault(
                    plugin, f"its tool {item.name!r} was left out because {owner!r} registers one of that name"
                )
                continue
            table[item.name] = tag_with_plugin(item, plugin)
            added.append(item.name)
        if added:
            self._place_late(table, added)
        return added

    def _place_late(self, table: dict[str, Any], added: Sequence[str]) -> None:
        """Keep the tools added after start-up last, in plugin order, then by name: in the order of
        the request's tools array, which providers cache. When they joined (a server ready at once in
        one process, late in the next; servers that answer in another order) then changes nothing."""
        self._late.update(added)
        order = self.host.order
        late = sorted((n for n in table if n in self._late), key=lambda n: (order.get(table[n].plugin, 0), n))
        for name in late:  # in place: the agent holds this very dict
            table[name] = table.pop(name)


def expected_type(kind: Kind) -> type:
    """The class (or runtime-checkable protocol) a registration hook's items must be."""
    from crab._contracts import channels, commands, providers, renderers, storage, tools

    found: dict[Kind, type] = {"tools": tools.Tool, "providers": providers.Provider, "stores": storage.Store}
    found |= {"renderers": renderers.RendererSpec, "commands": commands.Command, "channels": channels.Channel}
    return found[kind]


def tag_with_plugin(item: Any, plugin: str) -> Any:
    """Record which plugin registered ``item`` (a copy for frozen dataclasses)."""
    if hasattr(item, "__dataclass_fields__") and "plugin" in item.__dataclass_fields__:
        try:
            item.plugin = plugin
        except (AttributeError, TypeError):
            return replace(item, plugin=plugin)
    return item
