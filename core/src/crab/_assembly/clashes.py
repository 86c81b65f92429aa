"""Building one registry (tools, commands…) from every plugin's items, and settling name clashes
(never by whichever sorts first; docs/plugins.md).

Composition, moved here from ``crab._host``: which plugin's item one agent uses is decided from
how each plugin came to load (the host's ``Rank``), not part of finding, loading or calling them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crab._host.entry_points import normalized
from crab._host.plugin_host import CORE, INSTALLED, OWN_INSTALLED, PROGRAM, Rank

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
