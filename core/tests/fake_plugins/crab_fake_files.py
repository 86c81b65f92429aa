"""A fake tool plugin with a read tool and a write tool, to exercise the gate end to end."""

from pathlib import Path

import crab


@crab.tool
def peek(name: str) -> str:
    """Read a file of the workspace."""
    return Path(name).read_text()


@crab.tool(permission="write")
def touch(name: str) -> str:
    """Create a file in the workspace."""
    Path(name).write_text("touched")
    return f"created {name}"


@crab.hookimpl
def crab_tools(config):
    return [peek, touch]
