"""Fixtures for crab-lsp's tests: a home of its own, the real language servers (``ruff server`` and
``pylsp`` from the test extra, ``typescript-language-server`` installed with ``npm ci`` from the
committed lockfile in ``peers/`` into a cache shared by workers and checkouts), and a plugin with
the ``write`` tool crab-tools-basic has (a plugin's tests run with only core and that plugin)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lsp_support, by its unique name (--import-mode=importlib)

from lsp_support import pylsp_command, ruff_command, typescript_command


@pytest.fixture(autouse=True)
def own_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    (home / ".crab").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CRAB_HOME", str(home / ".crab"))
    return home


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
