"""``crab chat`` in a real terminal (tmux): the permission question shows the diff a write would
apply, and ``/undo`` then puts the file back and says which; ``crab checkpoints list`` lists it."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

HERE = Path(__file__).parent
WAIT = 30.0
"""Seconds a wait for text allows (generous: the machine is shared)."""
PROMPT = "answer (y, a or n, then Enter)>"


def make_site(root: Path) -> Path:
    """A folder that, on PYTHONPATH, makes the test plugin look pip-installed (entry point ``ckfake``)."""
    site = root / "site"
    site.mkdir()
    shutil.copy(HERE / "checkpoints_fakes.py", site / "checkpoints_fakes.py")
    dist = site / "checkpoints_fakes-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: checkpoints-fakes\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nckfake = checkpoints_fakes\n")
    return site


def environment(tmp_path: Path, replies: list[object]) -> dict[str, str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "TMUX"))}
    env.update(
        PYTHONPATH=str(make_site(tmp_path)),
        CRAB_HOME=str(tmp_path / "home"),
        CRAB_PLUGINS="ckfake,checkpoints",
        CHECKPOINTS_SCRIPT=str(script),
        TERM="xterm-256color",
    )
    return env


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
        return self.tmux("capture-pane", "-p", "-J", "-S", "-300", "-t", self.name)

    def wait_for(self, check: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            screen = self.text()
            if check(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"not on screen after {WAIT:.0f} s: {what}\n--- screen ---\n{self.text()}")


def test_the_question_shows_the_diff_and_undo_puts_the_file_back(repo: Path, tmp_path: Path, git) -> None:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed (apt-get install tmux); this test drives a real terminal")
    replies = [
        [{"tool": "put", "args": {"path": "a.txt", "content": "a rewritten by the model\n"}}],
        [{"text": "changed it"}],
    ]
    env = environment(tmp_path, replies)
    socket = tmp_path / "tmux.sock"
    name = f"ck{uuid.uuid4().hex[:8]}"
    command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script"]
    shell = shlex.join(command) + "; echo CHAT-EXITED $?; sleep 60"
    new = ["tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", name, "-x", "80", "-y", "40"]
    subprocess.run(
        [*new, "-c", str(repo), "env", "-i", *[f"{k}={v}" for k, v in env.items()], "sh", "-c", shell],
        check=True,
        timeout=30,
    )
    screen = Screen(socket, name)
    try:
        screen.wait_for(lambda text: "crab> " in text, "the chat prompt")
        screen.type("change a")
        shown = screen.wait_for(lambda text: PROMPT in text, "the permission question")
        assert "? allow write: put" in shown
        assert "  -a committed" in shown and "  +a rewritten by the model" in shown  # the diff it would apply
        screen.type("y")
        screen.wait_for(lambda text: "changed it" in text, "the answer")
        assert (repo / "a.txt").read_text() == "a rewritten by the model\n"
        screen.type("/undo")
        screen.wait_for(lambda text: "undid the last turn ('change a'): restored a.txt" in text, "the undo")
        assert (repo / "a.txt").read_text() == "a committed\n"
        screen.type("/undo")
        screen.wait_for(lambda text: "nothing to undo" in text, "nothing more to undo")
    finally:
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=30, check=False)


def test_crab_checkpoints_list_names_each_turn_and_its_files(repo: Path, tmp_path: Path, agent) -> None:
    h = agent([[{"tool": "put", "args": {"path": "a.txt", "content": "listed\n"}}], [{"text": "ok"}]], repo)
    h.run("change a for the list")
    env = environment(tmp_path, [])
    done = subprocess.run(
        [sys.executable, "-m", "crab", "checkpoints", "list"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "session  number  time  turn  files"
    assert lines[1].startswith(f"{h.session.id}  #1  ")
    assert lines[1].endswith("'change a for the list'  a.txt")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "crab", "checkpoints", "list"],
        cwd=outside,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == f"no checkpoints in {outside}\n"
