"""Fixtures for crab-lsp's tests: a home of its own, the real language servers (``ruff server`` and
``pylsp`` from the test extra, ``typescript-language-server`` installed with ``npm ci`` from the
committed lockfile in ``peers/`` into a cache shared by workers and checkouts), and a plugin with
the ``write`` tool crab-tools-basic has (a plugin's tests run with only core and that plugin)."""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

PEERS = Path(__file__).parent / "peers"
sys.path.insert(0, str(Path(__file__).parent))  # lsp_support, by its unique name (--import-mode=importlib)


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / ".crab").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CRAB_HOME", str(home / ".crab"))
    return home


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


@pytest.fixture
def ruff() -> list[str]:
    command = ruff_command()
    if command is None:
        pytest.fail("ruff is not installed: pip install -e 'plugins/lsp[test]'")
    return command


@pytest.fixture
def pylsp() -> list[str]:
    command = pylsp_command()
    if command is None:
        pytest.fail("python-lsp-server is not installed: pip install -e 'plugins/lsp[test]'")
    return command


@pytest.fixture
def typescript() -> list[str]:
    command = typescript_command()
    if isinstance(command, str):
        pytest.skip(command)
    return command
