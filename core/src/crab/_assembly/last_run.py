"""What the last ``crab run``/``chat``/``serve``/``doctor`` saw fail, per plugin and version, kept in
``$CRAB_HOME/plugin-failures.json`` so ``crab plugins list`` (which calls no hook) never calls a
plugin known to fail "loaded"; a later run in which the plugin works clears it. The composition
root writes it after a run and the CLI reads it: bookkeeping around the plugin host, not its work."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crab._host.plugin_host import PluginRecord

FILE_NAME = "plugin-failures.json"
MAX_PLUGINS = 100
"""Plugins remembered at most; the ones updated longest ago go first."""
MAX_REASON = 300
"""Characters of one reason kept (it is one line; the run showed it whole)."""
MAX_BYTES = 256 * 1024
"""A file larger than this is not read (it is not one crab wrote): nothing is remembered."""
PREFIX = "failed in the last run: "


@dataclass(frozen=True, slots=True)
class Remembered:
    """One plugin's failure as a run saw it: the version that failed and the one-line reason."""

    version: str
    reason: str


def failures_file(home: Path) -> Path:
    return home / FILE_NAME


def read(path: Path) -> dict[str, Remembered]:
    """Plugin → what the last run saw; empty when the file is missing, too large or not crab's."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        import json  # only once there is a file: most listings have none to read

        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    found = {}
    for name, entry in data.items():
        if isinstance(entry, dict) and isinstance(entry.get("version"), str) and isinstance(entry.get("reason"), str):
            found[name] = Remembered(entry["version"], entry["reason"])
    return found


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_REASON else line[: MAX_REASON - 1] + "…"


def outcome(record: PluginRecord) -> str | None:
    """The one line a run's failure or lost contribution left on ``record``, or None when it worked."""
    if record.status == "failed":
        return record.reason or "failed"
    return record.faults[0] if record.faults else None


def remember(path: Path, records: Mapping[str, PluginRecord], *, complete: bool, redact: Callable[[str], str]) -> None:
    """Record what each installed plugin that loaded (or failed to) met in this run, redacted and cut
    to one bounded line. With ``complete`` (every hook a run calls was called, ``crab_startup``
    included) a plugin that worked clears what an earlier run remembered of it; without, only new
    failures are added. Written atomically; a home that cannot be written is left alone (the run
    already showed each failure)."""
    import json

    from crab._system.atomic import write_atomic

    before = read(path)
    after = dict(before)
    for name, record in records.items():
        if record.distribution is None or record.status not in ("loaded", "failed"):
            continue  # built-ins, in-process plugins, disabled and missing ones: nothing ran
        line = outcome(record)
        if line is not None:
            after.pop(name, None)  # re-inserted last: the most recently seen stay when trimming
            after[name] = Remembered(record.version or "", _one_line(redact(line)))
        elif complete:
            after.pop(name, None)
    kept = dict(list(after.items())[-MAX_PLUGINS:])
    if kept == before:
        return
    data = {name: {"version": entry.version, "reason": entry.reason} for name, entry in kept.items()}
    try:
        write_atomic(path, (json.dumps(data, indent=1, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError:
        pass


def applied(record: PluginRecord, remembered: Mapping[str, Remembered]) -> PluginRecord:
    """``record`` as ``crab plugins list`` shows it: a plugin loading finds fine but that the last
    run of the same version saw fail is ``failed``, its reason saying so."""
    from dataclasses import replace

    entry = remembered.get(record.name)
    if record.status != "loaded" or entry is None or entry.version != (record.version or ""):
        return record
    return replace(record, status="failed", reason=PREFIX + entry.reason)
