"""crab-tape-jsonl: the ``jsonl`` session store, one append-only JSONL tape per session.

Config: ``[plugins.tape-jsonl] root = "..."`` (default ``~/.crab/sessions``), ``fsync = false``.
This module stays thin (``crab --help`` imports it): the store is imported when it is asked for.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

from crab import ConfigTable, hookimpl
from crab.config import crab_home, validate_table

if TYPE_CHECKING:
    from crab import Config, Store

    from crab_tape_jsonl.store import TapeStore
    from crab_tape_jsonl.tapefile import TornLineWarning

CRAB_API = ">=0.1,<0.2"

__all__ = ["CRAB_API", "TapeStore", "TornLineWarning", "crab_config_table", "crab_stores"]
_LAZY = {"TapeStore": "crab_tape_jsonl.store", "TornLineWarning": "crab_tape_jsonl.tapefile"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'crab_tape_jsonl' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


@hookimpl
def crab_config_table() -> ConfigTable:
    from crab_tape_jsonl.settings import TABLE

    return TABLE


@hookimpl
def crab_stores(config: Config) -> list[Store]:
    from crab_tape_jsonl.settings import TABLE
    from crab_tape_jsonl.store import TapeStore

    settings = validate_table(TABLE, config.plugin_settings(TABLE.name))
    root = settings.get("root") or crab_home() / "sessions"
    return [TapeStore(Path(root).expanduser(), fsync=settings["fsync"])]
