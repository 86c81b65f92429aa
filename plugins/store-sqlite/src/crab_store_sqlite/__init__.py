"""crab-store-sqlite: the ``sqlite`` session store, every session in one SQLite database.

Config: ``[plugins.store-sqlite] path = "..."`` (default ``~/.crab/crab.db``), ``busy_timeout``
(seconds, default 10) and ``synchronous`` (``"normal"`` or ``"full"``).
"""

from __future__ import annotations

from pathlib import Path

from crab.config import Config, crab_home
from crab.config_tables import ConfigTable, validate_table
from crab.hookspecs import hookimpl
from crab.storage import Store

from crab_store_sqlite.settings import TABLE
from crab_store_sqlite.store import FullTextSearchUnavailable, SqliteStore

CRAB_API = ">=1.0,<2"

__all__ = ["CRAB_API", "FullTextSearchUnavailable", "SqliteStore", "crab_config_table", "crab_stores"]


@hookimpl
def crab_config_table() -> ConfigTable:
    return TABLE


@hookimpl
def crab_stores(config: Config) -> list[Store]:
    settings = validate_table(TABLE, config.plugin_settings(TABLE.name))
    path = settings.get("path") or crab_home() / "crab.db"
    return [
        SqliteStore(Path(path).expanduser(), busy_timeout=settings["busy_timeout"], synchronous=settings["synchronous"])
    ]
