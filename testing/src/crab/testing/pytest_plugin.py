"""crab's pytest fixtures (registered through the ``pytest11`` entry point of crab-core).

- ``crab_home``: an empty ``CRAB_HOME`` and workspace for the test, with crab's environment
  variables cleared, the cwd set to the workspace;
- ``crab_agent``: a factory of ``AgentHarness`` objects (scripted provider, memory store, the
  plugins you name), closed after the test;
- ``crab_config``: write a config file (project or user) for the test and get the merged ``Config``;
- ``crab_cli``: run ``crab`` in-process and get a ``CliResult``;
- ``crab_site``: a ``ScriptedSite`` in ``tmp_path`` (a scripted provider plugin for a ``crab`` subprocess);
- ``crab_screen``: a factory of ``TmuxScreen`` objects (a program in tmux), closed after the test;
  the test is skipped where tmux is not installed;

and the ``slow`` marker, registered so ``--strict-markers`` accepts the tests contract suites mark.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from crab._config import environ
from crab._config.layers import load_config
from crab._contracts.config import Config
from crab.testing.harness import AgentHarness, CliResult, run_cli
from crab.testing.site import ScriptedSite
from crab.testing.tmux import TmuxScreen, tmux_available

CRAB_ENV = tuple(name for name in environ.ALL if name != environ.HOME)


def pytest_configure(config: pytest.Config) -> None:
    # Contract suites (crab_provider_kit.ProviderContract) mark their end-to-end tests ``slow``:
    # registered here, so a plugin's own ``--strict-markers`` (the template's) collects them.
    config.addinivalue_line("markers", "slow: takes more than a few seconds (a crab subprocess, a real server)")


@pytest.fixture
def crab_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh ``CRAB_HOME`` (``tmp_path/home``); the cwd becomes ``tmp_path/work``."""
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("CRAB_HOME", str(home))
    for name in CRAB_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(work)
    return home


@pytest.fixture
def crab_agent(crab_home: Path) -> Iterator[Callable[..., AgentHarness]]:
    """``crab_agent(replies, plugins={...}, config={...})`` → an ``AgentHarness``."""
    made: list[AgentHarness] = []

    def factory(*args: Any, **kwargs: Any) -> AgentHarness:
        kwargs.setdefault("workspace", Path(os.getcwd()))
        harness = AgentHarness(*args, **kwargs)
        made.append(harness)
        return harness

    yield factory
    for harness in made:
        harness.close()


@pytest.fixture
def crab_config(crab_home: Path) -> Callable[..., Config]:
    """``crab_config({"crab": {"model": "m"}}, scope="project")`` writes TOML and loads the result.

    ``scope="project"`` writes ``.crab/config.toml`` in the workspace (the cwd), ``"user"`` writes
    ``$CRAB_HOME/config.toml``; the returned ``Config`` merges every layer, as a run would.
    """

    def write(data: Mapping[str, Any], scope: str = "project") -> Config:
        import tomlkit

        path = crab_home / "config.toml" if scope == "user" else Path(os.getcwd()) / ".crab" / "config.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomlkit.dumps(dict(data)), encoding="utf-8")
        return load_config()

    return write


@pytest.fixture
def crab_cli(crab_home: Path) -> Callable[..., CliResult]:
    """``crab_cli("plugins", "list", env={...})`` runs the CLI in-process."""
    return run_cli


@pytest.fixture
def crab_site(tmp_path: Path) -> ScriptedSite:
    """A ``ScriptedSite`` in ``tmp_path``: provider ``fake`` with the model ``script``."""
    return ScriptedSite(tmp_path)


@pytest.fixture
def crab_screen(tmp_path: Path) -> Iterator[Callable[..., TmuxScreen]]:
    """``crab_screen(command, cwd=…, env=…, ready="crab>")`` starts ``command`` in tmux (a server of
    this test's own) and returns its ``TmuxScreen``; every screen ends after the test."""
    if not tmux_available():
        pytest.skip("tmux is not installed (apt-get install tmux); the terminal tests need it")
    socket = tmp_path / "tmux.sock"
    started: list[TmuxScreen] = []

    def start(command: list[str], **options: Any) -> TmuxScreen:
        screen = TmuxScreen.start(command, socket=socket, **options)
        started.append(screen)
        return screen

    yield start
    for screen in started:
        screen.close()
    TmuxScreen.kill_server(socket)
