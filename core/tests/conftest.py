"""Helpers for core's tests: a site folder with fake installed plugins (real entry points)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from crab.testing import TmuxScreen, tmux_available
from crab.testing.tmux import WAIT

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
    "broken-api-1x": "api_1x",
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


class PlainScreen(TmuxScreen):
    """crab.testing's tmux screen as the plain chat's tests type at it: each ``type`` is a line."""

    def type(self, text: str) -> None:
        super().type(text)
        self.keys("Enter")

    def wait_for(self, needle: str | Callable[[str], bool], what: str = "", timeout: float = WAIT) -> str:
        try:
            return super().wait_for(needle, timeout)
        except AssertionError as error:
            raise AssertionError(f"{what}: {error}" if what else str(error)) from None


@pytest.fixture
def plain_chat(fake_site, tmp_path: Path) -> Iterator[Callable[..., PlainScreen]]:
    """``plain_chat(replies, env=None)``: core's plain ``crab chat`` (no live input) inside tmux, on
    the scripted fake provider replaying ``replies``, in ``tmp_path / "work"``."""
    if not tmux_available():
        pytest.skip("tmux is not installed (apt-get install tmux); this test drives a real terminal")
    socket = tmp_path / "tmux.sock"

    def start(replies: list[object], env: dict[str, str] | None = None) -> PlainScreen:
        script = tmp_path / "script.json"
        script.write_text(json.dumps({"replies": replies}))
        environment = fake_site(["scripted", "files", "waiter"])
        environment.update(CRAB_PLUGINS="scripted,files,waiter", TERM="xterm-256color", **(env or {}))
        environment = {k: v for k, v in environment.items() if not k.startswith("TMUX")}
        work = tmp_path / "work"
        work.mkdir()
        command = [sys.executable, "-m", "crab", "chat", "-m", f"scripted/{script}"]
        screen = PlainScreen.start(command, socket=socket, cwd=work, env=environment, width=60, ready="crab> ")
        return screen

    yield start
    TmuxScreen.kill_server(socket)
