"""The registries one agent uses (tools, providers, stores, renderers, commands, channels), built
from every loaded plugin's items: collected through the dispatcher, checked, tagged with their
plugin, a name two plugins register settled by how each came to load (never by whichever sorts
first; ``build_registry``, docs/plugins.md), tools added after start-up kept in a canonical order.

Composition, not hosting (docs/architecture.md, "The kernel"): the host finds, loads and calls the
plugins; what one agent is made of from what they return is the composition root's, which attaches
a ``Registries`` to each host it builds (``choosing.build_host``). The loop reaches it through the
host it is given (``PluginHost.registry``), the host naming only its ``Registries`` Protocol."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from crab._host.entry_points import normalized
from crab._host.plugin_host import CORE, INSTALLED, OWN_INSTALLED, PROGRAM, Kind, Rank

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
        self._seen_registrations, self._seen_loaded = host.registrations, len(host.order)
        """What the tables were built for: a registration, or a failure (it shortens the order), since."""
        self._late: dict[str, dict[str, Tool]] = {}
        """Plugin → the tools ``add_tools`` added for it by name: kept when the table is rebuilt (a
        plugin failed), last in a canonical order (``_place_late``)."""

    def collect_all(self) -> None:
        """Run every registration hook (once), so statuses and conflicts are known before use.

        All kinds are collected before any registry is built, so a plugin that fails in one
        registration hook has none of its contributions used anywhere in the run.
        """
        host = self.host
        if self._seen_registrations != host.registrations or self._seen_loaded != len(host.order):
            self._seen_registrations, self._seen_loaded = host.registrations, len(host.order)
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
        host, table = self.host, self._tables.get(kind)
        fresh = self._seen_registrations == host.registrations == self._collected_at
        if table is not None and fresh and self._seen_loaded == len(host.order):
            return table  # nothing registered or failed since it was built
        self.collect_all()
        if kind not in self._tables:
            self._tables[kind] = self._build(kind)
        return self._tables[kind]

    def _build(self, kind: Kind) -> dict[str, Any]:
        """Name → item over the plugins still loaded; a name two plugins offer is settled by
        ``build_registry`` (never by which one sorts first), each item left out reported once as a
        fault of its plugin."""
        host, contributions = self.host, self._contributions[kind]
        order = sorted((n for n in contributions if n in host.order), key=host.order.__getitem__)
        records = host.records
        table, faults = build_registry(
            kind, contributions, order, host.ranks, lambda p: crab_own(getattr(records.get(p), "distribution", None))
        )
        for fault in faults:
            host.fault(fault.plugins[0], fault.reason, *fault.plugins[1:])  # one line for all who lost it
        if kind == "tools":
            self._add_late(
                table, [(p, tool) for p, tools in self._late.items() if p in host.order for tool in tools.values()]
            )
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
        late = []
        for item in tools:
            if isinstance(item, Tool):
                late.append((plugin, tag_with_plugin(item, plugin)))
            else:
                self.host.fault(plugin, f"add_tools was given a {type(item).__name__}, expected a Tool")
        return self._add_late(self.registry("tools"), late)

    def _add_late(self, table: dict[str, Any], tools: Sequence[tuple[str, Tool]]) -> list[str]:
        """Add (plugin, tool) pairs to ``table`` unless the name is taken, then keep the tools added
        after start-up last, in plugin order, then by name: in the order of the request's tools
        array, which providers cache. When they joined (a server ready at once in one process, late in
        the next; servers that answer in another order) then changes nothing."""
        added: list[str] = []
        for plugin, tool in tools:
            if tool.name in table:
                owner = table[tool.name].plugin or "another plugin"
                self.host.fault(
                    plugin, f"its tool {tool.name!r} was left out because {owner!r} registers one of that name"
                )
                continue
            table[tool.name] = self._late.setdefault(plugin, {})[tool.name] = tool
            added.append(tool.name)
        order, late = self.host.order, {id(t) for tools in self._late.values() for t in tools.values()}
        for name in sorted(
            (n for n in table if id(table[n]) in late), key=lambda n: (order.get(table[n].plugin, 0), n)
        ):
            table[name] = table.pop(name)  # in place: the agent holds this very dict
        return added


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


SETTLE = "[plugins] enabled"


@dataclass(frozen=True, slots=True)
class Fault:
    """An item left out of a registry: the plugins that lose it and the one line that says why."""

    plugins: tuple[str, ...]
    reason: str


def build_registry(
    kind: str,
    contributions: Mapping[str, Sequence[Any]],
    order: Sequence[str],
    ranks: Mapping[str, Rank],
    own: Callable[[str], bool] = lambda plugin: False,
) -> tuple[dict[str, Any], list[Fault]]:
    """Name → item over ``contributions`` (plugin → items) taken in load ``order``, and the faults.

    An item with ``override=True`` replaces the other on purpose. Otherwise the stronger word
    wins: crab's built-ins, then the program's own (``crab.Agent(tools=...)``, in-process
    plugins), then the order the user wrote (``--plugins``, ``CRAB_PLUGINS``, ``[plugins]
    enabled``: first listed wins). Installed plugins loaded only because they are installed have
    no order anyone chose: one from crab's own distributions (``own(plugin)``, asked only
    when such a clash happens) keeps the name, so a stray package never takes away a tool crab
    ships; a clash between two of the same kind leaves the name out for both, with one line
    naming them and the setting that settles it. Every item left out is a fault of its plugin.
    """
    noun = kind[:-1]
    table: dict[str, Any] = {}
    owner: dict[str, str] = {}
    contested: dict[str, list[str]] = {}  # names no one may keep: installed-only plugins clashed
    faults: list[Fault] = []

    def rank(plugin: str) -> Rank:
        given = ranks.get(plugin)
        if given is not None:
            return given
        return Rank(OWN_INSTALLED) if own(plugin) else Rank(INSTALLED)

    for plugin in order:
        for item in contributions.get(plugin, ()):
            name = item.name
            if name in contested:
                contested[name].append(plugin)
                continue
            if name not in table:
                table[name], owner[name] = item, plugin
                continue
            first, holder = table[name], owner[name]
            if getattr(item, "gives_way", False) != getattr(first, "gives_way", False):
                if getattr(first, "gives_way", False):  # what nobody vouched for never takes a name
                    table[name], owner[name] = item, plugin
                    faults.append(Fault((holder,), _gave_way(noun, name, first, plugin)))
                else:
                    faults.append(Fault((plugin,), _gave_way(noun, name, item, holder)))
                continue
            if getattr(item, "override", False) != getattr(first, "override", False):
                if getattr(item, "override", False):
                    table[name], owner[name] = item, plugin
                continue  # the one that says override=True replaces the other on purpose
            held, new = rank(holder), rank(plugin)
            if held.level == new.level and held.level in (OWN_INSTALLED, INSTALLED):
                del table[name], owner[name]
                contested[name] = [holder, plugin]
            elif {held.level, new.level} == {OWN_INSTALLED, INSTALLED}:
                winner, loser = (holder, plugin) if held.level == OWN_INSTALLED else (plugin, holder)
                if winner == plugin:
                    table[name], owner[name] = item, plugin
                faults.append(Fault((loser,), _crab_own_kept(noun, name, winner, loser)))
            elif new.level < held.level:
                table[name], owner[name] = item, plugin
                faults.append(Fault((holder,), _outranked(noun, name, plugin, new)))
            else:
                faults.append(Fault((plugin,), _kept(noun, name, holder, plugin, held, new, item)))
    for name, plugins in contested.items():
        first, others = plugins[0], ", ".join(repr(p) for p in plugins[1:])
        reason = (
            f"its {noun} {name!r} is also registered by plugin {others}, so neither is used; list both in "
            f"{SETTLE} (which then names every plugin that loads), the one that should win first, or disable "
            f"one ({' or '.join(f'crab plugins disable {p}' for p in plugins)})"
        )
        faults.append(Fault(tuple(plugins), reason))
    return table, faults


def _outranked(noun: str, name: str, winner: str, rank: Rank) -> str:
    if rank.level == CORE:
        who = f"crab's own {noun}"
    elif rank.level == PROGRAM:
        who = f"the program's own {noun} ({winner})"
    else:
        who = f"plugin {winner!r}'s {noun}, listed in {rank.source},"
    return f"its {noun} {name!r} was left out: {who} of that name takes its place"


def _crab_own_kept(noun: str, name: str, winner: str, loser: str) -> str:
    return (
        f"its {noun} {name!r} was left out: plugin {winner!r}, one of crab's own, registers that name, and a "
        f"plugin that is only installed never takes a name from it; list {loser} before {winner} in {SETTLE} "
        f"to use this one, or disable one of them (crab plugins disable {loser} or {winner})"
    )


def _written_in(item: Any) -> str:
    file = getattr(item, "file", "")
    return f" (from {file})" if file else ""


def _gave_way(noun: str, name: str, item: Any, winner: str) -> str:
    return (
        f"its {noun} {name!r}{_written_in(item)} was left out: it comes from a source you have not trusted, "
        f"and plugin {winner!r} registers that name"
    )


def _kept(noun: str, name: str, holder: str, plugin: str, held: Rank, new: Rank, item: Any = None) -> str:
    if held.level == CORE:
        fix = "rename the file" if getattr(item, "file", "") else "rename it in the plugin"
        return f"its {noun} {name!r}{_written_in(item)} was left out: crab's own {noun} has that name; {fix}"
    if held.level == PROGRAM and new.level > PROGRAM:
        return f"its {noun} {name!r} was left out: the program's own {noun} of that name ({holder}) takes its place"
    if held.level == PROGRAM:
        return f"its {noun} {name!r} was left out because plugin {holder!r} (given earlier) registers one too"
    return (
        f"its {noun} {name!r} was left out because plugin {holder!r} registers one too and comes first in "
        f"{held.source}; list {plugin} before {holder} there to use this one, or disable one of them "
        f"(crab plugins disable {holder} or {plugin})"
    )


CORE_DISTRIBUTION = "crab-core"


def crab_own(distribution: str | None) -> bool:
    """Whether ``distribution`` (None: a plugin from no distribution) is one of crab's own: its
    metadata names the same author as crab-core's (``the crab authors``). A rule against accidents
    (a stray package taking a tool's name), not a defence: an installed package runs its own code
    anyway. Reads metadata with ``importlib.metadata``, which only a name clash between installed
    plugins needs (so it is here, where name clashes are settled, not in ``crab._host``)."""
    from importlib import metadata

    if distribution is None:
        return False
    try:
        own = metadata.distribution(CORE_DISTRIBUTION).metadata["Author"]
        theirs = metadata.distribution(distribution).metadata["Author"]
    except (metadata.PackageNotFoundError, OSError, KeyError):
        return False
    return bool(own) and normalized(distribution) != CORE_DISTRIBUTION and theirs == own
