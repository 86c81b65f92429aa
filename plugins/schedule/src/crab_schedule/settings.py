"""``[plugins.schedule]``: its declaration and the values the plugin works with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import crab

from crab_schedule.timing import MAX_DURATION

NAME = "schedule"


def _check(values: Mapping[str, Any]) -> None:
    from crab_schedule.config_jobs import check_jobs

    check_jobs(values.get("jobs"), timezone=values.get("timezone") or "UTC")


TABLE = crab.ConfigTable(
    NAME,
    (
        crab.Setting(
            "path",
            "str",
            doc="the job store (SQLite file; default $CRAB_HOME/schedule.db): where jobs and the schedule log live",
            trust_only=True,
        ),
        crab.Setting(
            "store",
            "str",
            "sqlite",
            'job store: "sqlite" (the file at path) or one a plugin offers (crab-store-postgres: "postgres", '
            "shared by several crab serve workers)",
            trust_only=True,
        ),
        crab.Setting(
            "timezone",
            "str",
            doc="timezone of cron expressions and --at times that name none (default: the system's, else UTC)",
        ),
        crab.Setting(
            "catch_up",
            "float",
            3600.0,
            "seconds a missed run may be late and still run (once, however many were missed); "
            "later ones are skipped and logged",
            minimum=0,
        ),
        crab.Setting("poll_interval", "float", 1.0, "seconds between looks for due jobs in crab serve", above=0),
        crab.Setting(
            "lease",
            "float",
            300.0,
            "seconds a worker's claim on a running job lasts unless renewed; a killed worker's job runs again after it",
            above=0,
        ),
        crab.Setting(
            "job_timeout",
            "float",
            1800.0,
            "seconds an agent job's turn may run before it is stopped and logged as an error; a job may "
            "set its own (--timeout; the schedule_add tool only a shorter one)",
            above=0,
            maximum=MAX_DURATION,
        ),
        crab.Setting(
            "max_running",
            "int",
            8,
            "most jobs one crab serve runs at once; it claims due jobs only while it has room, so the "
            "rest go to other workers on the same store",
            minimum=1,
        ),
        crab.Setting("min_interval", "float", 60.0, "shortest --every interval, in seconds", minimum=0),
        crab.Setting("max_jobs", "int", 200, "most active jobs the store accepts", minimum=1),
        crab.Setting(
            "jobs",
            "table",
            doc="jobs declared here, [plugins.schedule.jobs.NAME]: cron or every, message or prompt, to, "
            "timezone, permissions, timeout",
            trust_only=True,
        ),
    ),
    doc="reminders and agent jobs that crab serve runs",
    check=_check,
)


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    path: Path
    timezone: str
    catch_up: timedelta
    poll_interval: float
    lease: timedelta
    min_interval: float
    max_jobs: int
    job_timeout: float = 1800.0
    max_running: int = 8
    jobs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    store: str = "sqlite"


def system_timezone() -> str:
    """The IANA name /etc/localtime points at, else ``UTC``."""
    try:
        target = Path("/etc/localtime").resolve()
    except OSError:
        return "UTC"
    parts = target.parts
    if "zoneinfo" in parts:
        name = "/".join(parts[parts.index("zoneinfo") + 1 :])
        if name:
            from zoneinfo import ZoneInfo

            try:
                ZoneInfo(name)
                return name
            except Exception:  # an odd file under zoneinfo/: fall back to UTC
                return "UTC"
    return "UTC"


def read_settings(values: Mapping[str, Any]) -> ScheduleSettings:
    """Checked ``[plugins.schedule]`` values (defaults filled by core) → settings."""
    path = values.get("path")
    return ScheduleSettings(
        path=Path(path).expanduser() if path else crab.config.crab_home() / "schedule.db",
        timezone=values.get("timezone") or system_timezone(),
        catch_up=timedelta(seconds=float(values.get("catch_up", 3600.0))),
        poll_interval=float(values.get("poll_interval", 1.0)),
        lease=timedelta(seconds=float(values.get("lease", 300.0))),
        min_interval=float(values.get("min_interval", 60.0)),
        max_jobs=int(values.get("max_jobs", 200)),
        job_timeout=float(values.get("job_timeout", 1800.0)),
        max_running=int(values.get("max_running", 8)),
        jobs=dict(values.get("jobs") or {}),
        store=str(values.get("store") or "sqlite"),
    )


def settings_of(config: crab.Config) -> ScheduleSettings:
    return read_settings(config.plugin_settings(NAME))


def open_store(settings: ScheduleSettings, offered: Callable[[], list[tuple[str, Any]]] | None = None) -> Any:
    """The job store ``[plugins.schedule] store`` names: SQLite (ours), or one another plugin
    offers through ``crab_job_stores``. ``offered`` collects that hook (``AgentHandle.collect``
    in a run); without it the plugins are loaded as a command does (``crab.hooks.collect_hook``).
    """
    if settings.store == "sqlite":
        from crab_schedule.sqlite_store import SQLiteJobStore

        return SQLiteJobStore(settings.path)
    results = offered() if offered is not None else crab.hooks.collect_hook("crab_job_stores").results
    stores = {getattr(store, "name", ""): store for _plugin, found in results for store in (found or [])}
    if settings.store in stores:
        return stores[settings.store]
    known = ", ".join(sorted({"sqlite", *stores}))
    raise crab.ConfigError(
        f"[plugins.schedule] store = {settings.store!r}: no loaded plugin offers that job store "
        f"(available: {known}; crab-store-postgres offers postgres)"
    )
