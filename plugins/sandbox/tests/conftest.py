"""Fixtures of crab-sandbox's tests: the real ``crab`` command (``python -m crab``) with the
sandbox, a scripted provider, and a ``bash`` tool (crab-tools-basic's when installed, else the
fake one beside this file, which starts its process through ``crab.processes`` the same way),
in a test HOME with planted secrets and a folder outside the workspace.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from crab.testing import ScriptedSite

FAKE_SITE = Path(__file__).parent / "fake_site"
SHELL = "tools-basic" if importlib.util.find_spec("crab_tools_basic") else "sandboxshell"
FAKES = {"sandboxshell": "crab_sandbox_fake_shell", "fakeserver": "crab_sandbox_fake_server"}
"""The test plugins beside crab.testing's scripted provider ``scripted``, by entry point."""
PRIVATE_KEY = "-----BEGIN OPENSSH PRIVATE KEY----- planted-test-key -----END OPENSSH PRIVATE KEY-----"
API_KEY = "sk-planted-demo-key-0123456789"
AUTH_KEY = "sk-planted-auth-key-9876543210"
WAIT = 60.0


def wait_until(check: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def processes_named(marker: str) -> list[int]:
    """Pids whose command line contains ``marker`` (the test's unique sleep)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                line = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if marker in line and state != "Z":
                found.append(int(entry.name))
    return found


def kill_named(marker: str) -> None:
    for pid in processes_named(marker):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class Crab:
    """``crab run --yolo`` with the sandbox on or off, in a test HOME holding planted secrets."""

    def __init__(self, root: Path, sandbox: str) -> None:
        self.root = root
        self.home = root / "home"
        self.crab_home = self.home / ".crab"
        self.work = root / "work"
        self.outside = root / "outside"
        for folder in (self.home / ".ssh", self.crab_home, self.work, self.outside):
            folder.mkdir(parents=True, exist_ok=True)
        (self.home / ".ssh" / "id_rsa").write_text(PRIVATE_KEY + "\n")
        (self.crab_home / "auth.json").write_text(json.dumps({"openai": AUTH_KEY}))
        self.shell = SHELL
        self.site = ScriptedSite(root, provider="scripted", models=("scripted",))
        for name, module in FAKES.items():
            self.site.add_plugin(name, module, (FAKE_SITE / f"{module}.py").read_text(encoding="utf-8"))
        site_env = self.site.env(f"scripted,{SHELL},sandbox", home=self.crab_home)
        self.env = {k: v for k, v in site_env.items() if not k.endswith("_API_KEY")}
        self.env.update(
            # The crab under test: keep a PYTHONPATH the tests were started with (a worktree's sources).
            PYTHONPATH=os.pathsep.join(filter(None, [str(self.site.path), os.environ.get("PYTHONPATH")])),
            HOME=str(self.home),
            DEMO_API_KEY=API_KEY,
            NO_COLOR="1",
        )
        self.config(f'[plugins.sandbox]\nmode = "{sandbox}"\n')
        self._scripts = 0

    def config(self, text: str) -> None:
        (self.crab_home / "config.toml").write_text(text)

    def script(self, commands: list[dict[str, Any]]) -> str:
        self._scripts += 1
        replies = [[{"tool": "bash", "args": args}] for args in commands] + [[{"text": "done"}]]
        path = self.site.script(replies, loop=True, file=self.root / f"script{self._scripts}.json")
        return f"scripted/{path}"

    def argv(self, commands: list[dict[str, Any]]) -> list[str]:
        return [sys.executable, "-m", "crab", "run", "--yolo", "-o", "json", "-m", self.script(commands), "go"]

    def run(self, *commands: str) -> list[str]:
        """Each command one bash call; returns each call's result text."""
        done = subprocess.run(
            self.argv([{"command": c} for c in commands]),
            env=self.env,
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=WAIT * 2,
        )
        assert done.returncode in (0, 1), done.stderr
        return [call["result"] for call in json.loads(done.stdout)["tool_calls"]]

    def start(self, *commands: dict[str, Any]) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(list(commands)),
            env=self.env,
            cwd=self.work,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def cli(self, *args: str, inside: list[str] | None = None) -> subprocess.CompletedProcess[str]:
        """``crab ARGS``; ``inside``: a command line to run it under (a sandbox without user namespaces)."""
        return subprocess.run(
            [*(inside or []), sys.executable, "-m", "crab", *args],
            env=self.env,
            cwd=self.work,
            capture_output=True,
            text=True,
            timeout=WAIT,
        )


@pytest.fixture
def make_crab(tmp_path: Path) -> Iterator[Callable[[str], Crab]]:
    made: list[Crab] = []

    def make(sandbox: str) -> Crab:
        crab = Crab(tmp_path / f"run{len(made)}", sandbox)
        made.append(crab)
        return crab

    yield make
    for marker in ("sleep 3170", "sleep 3171", "sleep 3172"):
        kill_named(marker)


@pytest.fixture
def kit() -> Any:
    """The planted values and process helpers, for the tests (conftest is not importable)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        API_KEY=API_KEY,
        AUTH_KEY=AUTH_KEY,
        PRIVATE_KEY=PRIVATE_KEY,
        WAIT=WAIT,
        processes_named=processes_named,
        wait_until=wait_until,
    )
