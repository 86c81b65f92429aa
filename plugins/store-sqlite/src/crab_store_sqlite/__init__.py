"""crab-store-sqlite: the ``sqlite`` session store, every session in one SQLite database.

Config: ``[plugins.store-sqlite] path = "..."`` (default ``~/.crab/crab.db``), ``busy_timeout``
(seconds, default 10) and ``synchronous`` (``"normal"`` or ``"full"``). This module stays thin
(``crab --help`` imports it): the store (and sqlite3) is imported when it is asked for.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab import ConfigTable, hookimpl
from crab.config import crab_home, validate_table

if TYPE_CHECKING:
    from crab import Config, Store

    from crab_store_sqlite.store import FullTextSearchUnavailable, SqliteStore

CRAB_API = ">=0.1,<0.2"

__all__ = ["CRAB_API", "FullTextSearchUnavailable", "SqliteStore", "crab_config_table", "crab_stores"]


@hookimpl
def crab_config_table() -> ConfigTable:
    from crab_store_sqlite.settings import TABLE

    return TABLE


def __getattr__(name: str) -> Any:
    if name not in ("FullTextSearchUnavailable", "SqliteStore"):
        raise AttributeError(f"module 'crab_store_sqlite' has no attribute {name!r}")
    return getattr(importlib.import_module("crab_store_sqlite.store"), name)


@hookimpl
def crab_stores(config: Config) -> list[Store]:
    from crab_store_sqlite.settings import TABLE
    from crab_store_sqlite.store import SqliteStore

    settings = validate_table(TABLE, config.plugin_settings(TABLE.name))
    path = settings.get("path") or crab_home() / "crab.db"
    return [
        SqliteStore(Path(path).expanduser(), busy_timeout=settings["busy_timeout"], synchronous=settings["synchronous"])
    ]
