"""Why a store or provider someone asked for is not there: the installed plugins that did not load,
each with its reason and how to load it, found without importing any of them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crab._host.plugin_host import PluginHost, PluginRecord

SHOWN = 5
"""Plugins named in one line at most: the rest are counted."""


def unloaded(host: PluginHost) -> list[PluginRecord]:
    """Installed plugins this host did not load: disabled, not chosen, or failed. A host that read no
    metadata (a program's ``plugins=[]``, ``host.unread_source``) reads it now: only an error needs it."""
    from crab._host.plugin_host import PluginRecord, discover_entry_points

    found = [r for r in host.records.values() if r.status in ("disabled", "failed") and r.distribution]
    if host.unread_source:
        for ep in discover_entry_points():
            if ep.name not in host.records:
                dist = ep.dist
                found.append(
                    PluginRecord(
                        name=ep.name,
                        status="disabled",
                        distribution=dist.name if dist else None,
                        version=dist.version if dist else None,
                        reason=f"not listed in {host.unread_source}",
                    )
                )
    return found


def likely_offering(records: Sequence[PluginRecord], wanted: str) -> list[PluginRecord]:
    """The plugins whose name suggests they offer ``wanted`` (``jsonl`` → ``tape-jsonl``,
    ``mock`` → ``provider-mock``): crab's naming habit, since a plugin not loaded is never asked."""
    return [r for r in records if r.name == wanted or wanted in r.name.split("-")]


def how_to_load(record: PluginRecord, name: str | None = None) -> str:
    """What keeps ``record`` from loading and what to do, as one clause (``name`` stands for the plugin
    when one clause speaks of several)."""
    from crab._host.plugin_host import DISABLED_REASON

    who = name or record.name
    reason = record.reason or "not loaded"
    if record.status == "failed":
        return f"it failed: {reason}"
    if reason == DISABLED_REASON or reason == "not listed in [plugins] enabled":
        return f"{reason}: `crab plugins enable {who}` loads it"
    if reason.startswith("not listed in the program's plugins list"):
        return f"{reason}: add {who!r} to it"
    if reason.startswith("not listed in "):
        return f"{reason}: add {who} there"
    return reason


def explain(records: Sequence[PluginRecord]) -> str:
    """``plugin X is installed but not loaded (REASON: FIX)`` for one, or the names and the shared
    reason for several; empty for none."""
    if not records:
        return ""
    if len(records) == 1:
        return f"plugin {records[0].name} is installed but not loaded ({how_to_load(records[0])})"
    names = ", ".join(r.name for r in records[:SHOWN])
    if len(records) > SHOWN:
        names += f" and {len(records) - SHOWN} more"
    same = len({how_to_load(r, "NAME") for r in records}) == 1
    why = f" ({how_to_load(records[0])}, or another of them)" if same else " (`crab plugins list` says why each is not)"
    return f"plugins {names} are installed but not loaded{why}"
