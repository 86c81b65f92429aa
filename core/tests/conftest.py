"""Helpers for core's tests: a site folder with fake installed plugins (real entry points)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

FAKES = Path(__file__).parent / "fake_plugins"
FAKE_NAMES = {
    "good": "crab_fake_good",
    "import-error": "crab_fake_import_error",
    "hook-error": "crab_fake_hook_error",
    "garbage": "crab_fake_garbage",
    "duplicate": "crab_fake_duplicate",
    "future-api": "crab_fake_api",
    "recorder": "crab_fake_recorder",
    "cli-extra": "crab_fake_cli",
    "cli-config": "crab_fake_cli_config",
    "scripted": "crab_fake_scripted",
    "files": "crab_fake_files",
    "channel": "crab_fake_channel",
    "configured": "crab_fake_configured",
    "misnamed": "crab_fake_misnamed",
    "legacy": "crab_fake_legacy",
    "stuck": "crab_fake_stuck",
    "inbox": "crab_fake_inbox",
    "waiter": "crab_fake_waiter",
    "docs-provider": "crab_fake_docs_provider",
}
BROKEN_PACKAGE = "crab_fake_broken"
"""One third-party package (distribution crab-fake-broken), one entry point per way a plugin breaks."""
BROKEN = {
    "broken-import": "import_error",
    "broken-tools": "tools_raise",
    "broken-event": "event_raise",
    "broken-before-tool": "before_tool_raise",
    "broken-after-tool": "after_tool_raise",
    "broken-before-model": "before_model_raise",
    "broken-prompt": "prompt_raise",
    "broken-startup": "startup_raise",
    "broken-shutdown": "shutdown_raise",
    "broken-wrapper": "wrapper",
    "broken-hookwrapper": "hookwrapper",
    "broken-api-int": "api_int",
    "broken-api-old": "api_old",
    "broken-api-new": "api_new",
    "shadow-ls": "shadow_ls",
    "closing": "closing",
    "broken-cli": "cli_raise",
    "broken-table": "table_raise",
}


def make_site(root: Path, names: list[str]) -> Path:
    """A folder that, on PYTHONPATH, makes the named fakes look pip-installed (dist-info + entry point)."""
    site = root / "site"
    site.mkdir(exist_ok=True)
    broken = [n for n in names if n in BROKEN]
    if broken:
        shutil.copytree(FAKES / BROKEN_PACKAGE, site / BROKEN_PACKAGE, dirs_exist_ok=True)
        dist = site / f"{BROKEN_PACKAGE}-0.0.1.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-fake-broken\nVersion: 0.0.1\n")
        points = "".join(f"{n} = {BROKEN_PACKAGE}.{BROKEN[n]}\n" for n in broken)
        (dist / "entry_points.txt").write_text(f"[crab]\n{points}")
    for name in names:
        if name in BROKEN:
            continue
        module = FAKE_NAMES[name]
        shutil.copy(FAKES / f"{module}.py", site / f"{module}.py")
        dist = site / f"crab_fake_{name.replace('-', '_')}-0.0.1.dist-info"
        dist.mkdir(exist_ok=True)
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: crab-fake-{name}\nVersion: 0.0.1\n")
        (dist / "entry_points.txt").write_text(f"[crab]\n{name} = {module}\n")
    return site


@pytest.fixture
def fake_site(tmp_path: Path):
    """``fake_site(["good", "garbage"])`` → env for a subprocess that sees exactly those fakes."""

    def build(names: list[str]) -> dict[str, str]:
        site = make_site(tmp_path, names)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        env["PYTHONPATH"] = str(site)
        env["CRAB_HOME"] = str(tmp_path / "home")
        env["CRAB_FAKE_IMPORT_LOG"] = str(tmp_path / "imports.log")
        return env

    return build


def _crab(args: list[str], env: dict[str, str], cwd: Path | None = None, stdin: str | None = None):
    return subprocess.run(
        [sys.executable, "-m", "crab", *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def crab_run():
    """``crab_run(args, env, cwd=None, stdin=None)`` runs the real ``crab`` command (``python -m crab``)."""
    return _crab


# --- plain crab chat in a real terminal (tmux) -----------------------------------------------

PLAIN_WAIT = 30.0
"""Seconds a wait for text on the plain chat's screen allows (generous: the machine is shared)."""


class Screen:
    """``crab chat`` running in a detached tmux session."""

    def __init__(self, socket: Path, name: str) -> None:
        self.socket, self.name = socket, name

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30, check=False
        )
        return done.stdout

    def type(self, text: str) -> None:
        self.tmux("send-keys", "-t", self.name, "-l", text)
        self.tmux("send-keys", "-t", self.name, "Enter")

    def text(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.name)

    def wait_for(self, check: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + PLAIN_WAIT
        while time.monotonic() < deadline:
            screen = self.text()
            if check(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"not on screen after {PLAIN_WAIT:.0f} s: {what}\n--- screen ---\n{self.text()}")


@pytest.fixture
def plain_chat(fake_site, tmp_path: Path) -> Iterator[Callable[..., Screen]]:
    """``plain_chat(replies, env=None)``: core's plain ``crab chat`` (no live input) inside tmux, on
    the scripted fake provider replaying ``replies``, in ``tmp_path / "work"``."""
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux); this test drives a real terminal")
    socket = tmp_path / "tmux.sock"

    def start(replies: list[object], env: dict[str, str] | None = None) -> Screen:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"replies": replies}))
        environment = fake_site(["scripted", "files", "waiter"])
        environment.update(CRAB_PLUGINS="scripted,files,waiter", TERM="xterm-256color", **(env or {}))
        environment = {k: v for k, v in environment.items() if not k.startswith("TMUX")}
        work = tmp_path / "work"
        work.mkdir()
        command = [sys.executable, "-m", "crab", "chat", "-m", f"scripted/{script}"]
        shell = shlex.join(command) + "; echo CHAT-EXITED $?; sleep 60"
        name = f"plain{uuid.uuid4().hex[:8]}"
        new = ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "60", "-y", "40"]
        subprocess.run(
            [*new, "-c", str(work), "env", "-i", *[f"{k}={v}" for k, v in environment.items()], "sh", "-c", shell],
            check=True,
            timeout=30,
        )
        screen = Screen(socket, name)
        screen.wait_for(lambda text: "crab> " in text, "the chat prompt")
        return screen

    yield start
    subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=30, check=False)
