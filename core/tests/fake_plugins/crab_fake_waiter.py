"""A fake tool plugin whose read tool waits until a file exists: a turn that runs exactly as long
as the test wants (for keys typed while a tool runs)."""

import time
from pathlib import Path

import crab


@crab.tool
def wait_for(name: str) -> str:
    """Wait (at most a minute) until the file ``name`` exists."""
    deadline = time.monotonic() + 60
    while not Path(name).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"{name} is there"


@crab.hookimpl
def crab_tools(config):
    return [wait_for]
