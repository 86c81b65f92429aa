"""A program in a detached tmux session of a fixed size, typed at and read as its screen shows it:
how ``crab chat``'s end-to-end tests drive a real terminal (``TmuxScreen``)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

WAIT = 30.0
"""Seconds ``wait_for`` waits for its text: generous, for a loaded machine (an upper bound only)."""
EXITED = "CRAB-TEST-EXITED"
"""What the screen shows, with the exit status after it, once the program has ended."""


def tmux_available() -> bool:
    """Whether the ``tmux`` command is installed (a test skips without it)."""
    return shutil.which("tmux") is not None


class TmuxScreen:
    """One program in its own tmux session on the server at ``socket``; ``start`` makes one.

    When the program ends the screen shows ``CRAB-TEST-EXITED <status>`` and stays readable.
    """

    def __init__(self, name: str, socket: Path) -> None:
        self.name = name
        self.socket = socket

    @classmethod
    def start(
        cls,
        command: Sequence[str],
        *,
        socket: Path,
        cwd: Path,
        env: Mapping[str, str],
        width: int = 100,
        height: int = 40,
        ready: str | None = None,
    ) -> TmuxScreen:
        """Run ``command`` in ``cwd`` with exactly ``env`` (plus ``TERM=xterm-256color`` unless it
        sets one) on a ``width`` x ``height`` screen; with ``ready``, wait until that text shows."""
        name = f"crab{uuid.uuid4().hex[:8]}"
        environment = {"TERM": "xterm-256color", **env}
        shell = " ".join(shlex.quote(part) for part in command) + f"; echo {EXITED} $?; sleep 600"
        subprocess.run(
            [
                *("tmux", "-S", str(socket), "-f", "/dev/null", "new-session", "-d", "-s", name),
                *("-x", str(width), "-y", str(height), "-c", str(cwd)),
                *("env", "-i", *[f"{k}={v}" for k, v in environment.items()], "sh", "-c", shell),
            ],
            check=True,
            timeout=30,
        )
        screen = cls(name, socket)
        if ready is not None:
            screen.wait_for(ready)
        return screen

    def tmux(self, *args: str) -> str:
        """Run a tmux command on this screen's server (``"resize-window", "-t", screen.name, …``); its stdout."""
        done = subprocess.run(
            ["tmux", "-S", str(self.socket), *args], capture_output=True, text=True, timeout=30, check=False
        )
        return done.stdout

    def keys(self, *keys: str) -> None:
        """Send tmux key names (``Enter``, ``C-c``, ``Tab``)."""
        self.tmux("send-keys", "-t", self.name, *keys)

    def type(self, text: str) -> None:
        """Type ``text`` literally."""
        self.tmux("send-keys", "-t", self.name, "-l", text)

    def text(self) -> str:
        """The screen and 200 lines of scrollback, wrapped lines joined."""
        return self.tmux("capture-pane", "-p", "-J", "-S", "-200", "-t", self.name)

    def rows(self) -> list[str]:
        """The screen and its scrollback as the eye sees them: wrapped lines not joined, right-stripped."""
        return [row.rstrip() for row in self.tmux("capture-pane", "-p", "-S", "-200", "-t", self.name).splitlines()]

    def wait_for(self, needle: str | Callable[[str], bool], timeout: float = WAIT) -> str:
        """The screen once it shows ``needle`` (or ``needle(screen)`` is true); ``AssertionError``
        with the screen after ``timeout`` seconds."""
        check = needle if callable(needle) else (lambda screen: needle in screen)
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.text()
            if check(screen):
                return screen
            time.sleep(0.1)
        raise AssertionError(f"not on screen after {timeout:.0f} s: {needle!r}\n--- screen ---\n{screen}")

    def close(self) -> None:
        """End the session (its program gets SIGHUP)."""
        self.tmux("kill-session", "-t", self.name)

    @staticmethod
    def kill_server(socket: Path) -> None:
        """End the tmux server at ``socket`` and whatever still runs in it."""
        subprocess.run(["tmux", "-S", str(socket), "kill-server"], capture_output=True, timeout=30, check=False)
