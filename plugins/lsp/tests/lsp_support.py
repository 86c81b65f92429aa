"""What crab-lsp's tests (and bench/lsp.py) share besides fixtures: the real servers' commands
(``typescript-language-server`` installed with ``npm ci`` from ``peers/``' lockfile into a cache
shared by workers and checkouts), a ``write`` tool and a server table."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import crab

PEERS = Path(__file__).parent / "peers"


def ruff_command() -> list[str] | None:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    return [found, "server"] if found else None


def pylsp_command() -> list[str] | None:
    return [sys.executable, "-m", "pylsp"] if importlib.util.find_spec("pylsp") else None


def npm_peers() -> Path | str:
    """The folder holding ``node_modules`` of the pinned servers, or why there is none."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return "node/npm not installed (apt-get install nodejs npm)"
    key = hashlib.sha256((PEERS / "package-lock.json").read_bytes() + (PEERS / "package.json").read_bytes())
    base = Path(os.environ.get("CRAB_LSP_NPM_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or "/tmp") / "crab-tests")
    folder = base / f"lsp-peers-{key.hexdigest()[:16]}"
    marker = folder / "node_modules" / ".bin" / "typescript-language-server"
    if marker.exists():
        return folder
    base.mkdir(parents=True, exist_ok=True)
    with open(base / f"{folder.name}.lock", "w") as lock:  # workers share the cache: one installs
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return folder
        folder.mkdir(exist_ok=True)
        for name in ("package.json", "package-lock.json"):
            shutil.copy(PEERS / name, folder / name)
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
    if done.returncode != 0 or not marker.exists():
        return f"npm ci of the pinned language servers failed: {(done.stderr.strip().splitlines() or ['-'])[-1]}"
    return folder


def typescript_command() -> list[str] | str:
    found = npm_peers()
    if isinstance(found, str):
        return found
    return [str(found / "node_modules" / ".bin" / "typescript-language-server"), "--stdio"]


def server_table(command: list[str], patterns: list[str]) -> dict[str, object]:
    return {"command": command[0], "args": command[1:], "patterns": patterns}


class FakeWrite:
    """``write`` and ``edit`` as crab-tools-basic names them: write the file, say so."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace

    @crab.hookimpl
    def crab_tools(self) -> list[crab.Tool]:
        workspace = self.workspace

        @crab.tool(name="write", permission="read")
        def write(path: str, content: str) -> str:
            """Write a file."""
            (workspace / path).parent.mkdir(parents=True, exist_ok=True)
            (workspace / path).write_text(content, encoding="utf-8")
            return f"wrote {path}"

        return [write]
