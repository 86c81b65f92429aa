"""The tools and router commands this plugin registers, built for one configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from crab import Command, Tool

from crab_tools_basic.bash import make_bash_tool
from crab_tools_basic.edit import edit
from crab_tools_basic.files import read, write
from crab_tools_basic.job_tools import jobs_command, make_job_tools
from crab_tools_basic.search import glob, grep, ls
from crab_tools_basic.settings import load_settings


def build_tools(table: Mapping[str, Any]) -> list[Tool]:
    """read, write, edit, bash (and its background jobs' bash_output and bash_kill), glob, grep and
    ls; a bad config table raises ``ConfigError``."""
    settings = load_settings(table)
    return [read, write, edit, make_bash_tool(settings), *make_job_tools(), glob, grep, ls]


def build_commands() -> list[Command]:
    """``/jobs``."""
    return [jobs_command()]
