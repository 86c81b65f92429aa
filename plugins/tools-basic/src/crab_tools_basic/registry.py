"""The list of tools this plugin registers, built for one configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crab import Tool

from crab_tools_basic.bash import make_bash_tool
from crab_tools_basic.edit import edit
from crab_tools_basic.files import read, write
from crab_tools_basic.search import glob, grep, ls
from crab_tools_basic.settings import load_settings


def build_tools(table: Mapping[str, Any]) -> list[Tool]:
    """read, write, edit, bash, glob, grep and ls; a bad config table raises ``ConfigError``."""
    settings = load_settings(table)
    return [read, write, edit, make_bash_tool(settings), glob, grep, ls]
