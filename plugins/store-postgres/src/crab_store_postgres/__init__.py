"""crab-store-postgres: the ``postgres`` session store, every session in one PostgreSQL schema.

Several ``crab serve`` workers on several machines can share it. Config: ``[plugins.store-postgres]``
``dsn`` (trust-only; ``CRAB_POSTGRES_DSN`` and the auth file's ``"postgres"`` entry come first),
``schema`` (default ``crab``), ``pool_size`` and ``connect_timeout``. This module stays thin
(``crab --help`` imports it): psycopg and the store are imported when the store is asked for.
It also offers crab-schedule a job store on the same database (``crab_job_stores``), and turns
psycopg's log records into the running agent's warning notices (``crab_startup``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from crab import ConfigTable, hookimpl
from crab.config import validate_table

if TYPE_CHECKING:
    from crab import AgentHandle, Config, Store

    from crab_store_postgres.jobs import PostgresJobStore
    from crab_store_postgres.store import PostgresStore

CRAB_API = ">=0.1,<0.2"

__all__ = [
    "CRAB_API",
    "PostgresJobStore",
    "PostgresStore",
    "crab_config_table",
    "crab_job_stores",
    "crab_shutdown",
    "crab_startup",
    "crab_stores",
]


@hookimpl
def crab_config_table() -> ConfigTable:
    from crab_store_postgres.settings import TABLE

    return TABLE


def __getattr__(name: str) -> Any:
    modules = {"PostgresStore": "crab_store_postgres.store", "PostgresJobStore": "crab_store_postgres.jobs"}
    if name not in modules:
        raise AttributeError(f"module 'crab_store_postgres' has no attribute {name!r}")
    return getattr(importlib.import_module(modules[name]), name)


@hookimpl
def crab_startup(agent: AgentHandle) -> None:
    """psycopg's log records become this agent's warning notices (``crab_store_postgres.logs``)."""
    from crab_store_postgres.logs import route_to

    route_to(agent)


@hookimpl
def crab_shutdown(agent: AgentHandle) -> None:
    from crab_store_postgres.logs import stop_routing

    stop_routing(agent)


@hookimpl
def crab_stores(config: Config) -> list[Store]:
    return [_store(config)]


@hookimpl
def crab_job_stores(config: Config) -> list[Any]:
    """crab-schedule's jobs on the same database (``[plugins.schedule] store = "postgres"``)."""
    from crab_store_postgres.jobs import PostgresJobStore

    return [PostgresJobStore(_store(config))]


def _store(config: Config) -> PostgresStore:
    from crab_store_postgres.dsn import find_dsn
    from crab_store_postgres.settings import TABLE
    from crab_store_postgres.store import PostgresStore

    settings = validate_table(TABLE, config.plugin_settings(TABLE.name))
    source = find_dsn(settings)
    return PostgresStore(
        source.dsn,
        schema=settings["schema"],
        pool_size=settings["pool_size"],
        connect_timeout=settings["connect_timeout"],
        setting=source.setting,
    )
