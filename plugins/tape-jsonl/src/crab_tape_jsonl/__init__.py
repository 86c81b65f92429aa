"""crab-tape-jsonl: the ``jsonl`` session store, one append-only JSONL tape per session.

Config: ``[plugins.tape-jsonl] root = "..."`` (default ``~/.crab/sessions``), ``fsync = false``.
"""

from __future__ import annotations

from pathlib import Path

from crab.config import Config, crab_home
from crab.config_tables import ConfigTable, validate_table
from crab.hookspecs import hookimpl
from crab.storage import Store

from crab_tape_jsonl.settings import TABLE
from crab_tape_jsonl.store import TapeStore
from crab_tape_jsonl.tapefile import TornLineWarning

CRAB_API = ">=1.0,<2"

__all__ = ["CRAB_API", "TapeStore", "TornLineWarning", "crab_config_table", "crab_stores"]


@hookimpl
def crab_config_table() -> ConfigTable:
    return TABLE


@hookimpl
def crab_stores(config: Config) -> list[Store]:
    settings = validate_table(TABLE, config.plugin_settings(TABLE.name))
    root = settings.get("root") or crab_home() / "sessions"
    return [TapeStore(Path(root).expanduser(), fsync=settings["fsync"])]
