"""Reading configuration beyond a plugin's checked table (``config.plugin_settings(name)``):
typed reads of nested tables (``PluginTable``), checking a raw table against a ``crab.ConfigTable``
(``validate_table``) and the user's crab folder (``crab_home``); docs/configuration.md."""

from crab._config.layers import PluginTable, validate_table
from crab._config.paths import crab_home

__all__ = ["PluginTable", "crab_home", "validate_table"]
