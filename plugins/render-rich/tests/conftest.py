"""Fixtures for crab-render-rich's tests: a site folder with the test plugin, and a tmux screen."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
FAKE = "render_rich_fakes"
WAIT = 30.0
"""Seconds a screen assertion waits for its text (generous: the machine is shared)."""


def make_site(root: Path) -> Path:
    """A folder that, on PYTHONPATH, makes the test plugin look pip-installed (entry point ``rrfake``)."""
    site = root / "site"
    site.mkdir(exist_ok=True)
    shutil.copy(HERE / f"{FAKE}.py", site / f"{FAKE}.py")
    dist = site / "render_rich_fakes-0.0.1.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: render-rich-fakes\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text(f"[crab]\nrrfake = {FAKE}\n")
    return site


@pytest.fixture
def fake_env(tmp_path: Path) -> Callable[[list[Any]], dict[str, str]]:
    """``fake_env(replies)``: the environment for a ``crab`` subprocess that sees only the test
    plugin and this one, with the fake provider replaying ``replies``."""

    def build(replies: list[Any]) -> dict[str, str]:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"replies": replies}))
        environment = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "TMUX"))}
        environment.update(
            PYTHONPATH=str(make_site(tmp_path)),
            CRAB_HOME=str(tmp_path / "home"),
            CRAB_PLUGINS="rrfake,render-rich",
            RENDER_RICH_REQUESTS=str(tmp_path / "requests.jsonl"),
            RENDER_RICH_MODELS=str(tmp_path / "models.txt"),
            RENDER_RICH_SCRIPT=str(script),
            RENDER_RICH_STORE=str(tmp_path / "store.json"),
        )
        return environment

    return build


class Screen:
    """``crab chat`` running in a detached tmux session of a fixed size."""

    def __init__(self, name: str, socket: Path) -> None:
        self.name = name
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30, check=False
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.name)

    def rows(self) -> list[str]:
        """The screen and its scrollback as the eye sees them: wrapped lines not joined, right-stripped."""
        return [row.rstrip() for row in self.tmux("capture-pane", "-p", "-S", "-200", "-t", self.name).splitlines()]

    def wait_for(self, needle: str | Callable[[str], bool], timeout: float = WAIT) -> str:
        check = needle if callable(needle) else (lambda screen: needle in screen)
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.text()
            if check(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"not on screen after {timeout:.0f} s: {needle!r}\n--- screen ---\n{screen}")


@pytest.fixture
def chat_screen(tmp_path: Path, fake_env: Callable[[list[Any]], dict[str, str]]) -> Iterator[Callable[..., Screen]]:
    """``chat_screen(replies, *args)`` starts ``crab chat`` on the fake provider inside tmux and
    waits for ``ready`` (the prompt; the ``-r`` picker's question shows before it)."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux); the terminal tests need it")
    socket = tmp_path / "tmux.sock"
    started: list[Screen] = []

    def start(replies: list[Any], *args: str, env: dict[str, str] | None = None, ready: str = "❯") -> Screen:
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        environment = fake_env(replies)
        environment.update(TERM="xterm-256color", **(env or {}))
        name = f"rr{uuid.uuid4().hex[:8]}"
        command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script", *args]
        shell = " ".join(_quote(part) for part in command) + "; echo CHAT-EXITED $?; sleep 60"
        tmux = ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "100", "-y", "40"]
        subprocess.run(
            [*tmux, "-c", str(work), "env", *[f"{k}={v}" for k, v in environment.items()], "sh", "-c", shell],
            check=True,
            timeout=30,
        )
        screen = Screen(name, socket)
        started.append(screen)
        screen.wait_for(ready)
        return screen

    yield start
    for screen in started:
        screen.tmux("kill-session", "-t", screen.name)
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=30, check=False)


@pytest.fixture
def sent_requests(tmp_path: Path) -> Callable[[], list[list[dict[str, Any]]]]:
    """``sent_requests()``: every request the fake provider received, its messages as dicts."""

    def read() -> list[list[dict[str, Any]]]:
        path = tmp_path / "requests.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    return read


def _quote(text: str) -> str:
    import shlex

    return shlex.quote(text)
