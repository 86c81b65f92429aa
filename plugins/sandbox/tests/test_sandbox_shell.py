"""A ``!cmd`` runs inside the sandbox like a tool's command, except one a person types at the
keyboard of ``crab chat`` (by default: they are the user); ``shell_escape = "sandbox"`` wraps that
too, and an untrusted project cannot undo that."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest

pytestmark = pytest.mark.xdist_group("sandbox-sleeps")  # make_crab ends every test's marked sleeps: one worker

READ_KEY = "!cat ~/.ssh/id_rsa"


def _run(crab) -> str:
    """``crab run`` with a ``!cmd`` as its input (no keyboard: piped, scripted, scheduled)."""
    done = crab.cli("run", "--yolo", "-o", "json", "-m", crab.script([]), READ_KEY)
    assert done.returncode in (0, 1), done.stderr
    return str(json.loads(done.stdout)["text"])


def _typed(crab, wait: float) -> str:
    """``crab chat`` with a terminal as stdin (a person types each line), the ``!cmd`` typed."""
    master, slave = pty.openpty()
    try:
        chat = subprocess.Popen(
            [sys.executable, "-m", "crab", "chat", "-m", crab.script([])],
            env=crab.env,
            cwd=crab.work,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(master, f"{READ_KEY}\n\x04".encode())  # the line, then end of input
        out, err = chat.communicate(timeout=wait)
    finally:
        os.close(slave)
        os.close(master)
    assert chat.returncode == 0, err
    return out + err  # a failed command's output is shown on stderr


def test_a_bang_command_outside_the_chat_keyboard_is_sandboxed(kit, make_crab):
    text = _run(make_crab("on"))
    assert kit.PRIVATE_KEY not in text
    assert "Permission denied" in text


def test_typed_at_the_chat_keyboard_it_is_the_users_own_command_by_default(kit, make_crab):
    assert kit.PRIVATE_KEY in _typed(make_crab("on"), kit.WAIT)


def test_shell_escape_sandbox_wraps_the_keyboard_too_and_a_project_cannot_undo_it(kit, make_crab):
    crab = make_crab("on")
    crab.config('[plugins.sandbox]\nshell_escape = "sandbox"\n')
    project = crab.work / ".crab"
    project.mkdir()
    (project / "config.toml").write_text('[plugins.sandbox]\nshell_escape = "keyboard-free"\n')
    out = _typed(crab, kit.WAIT)
    assert kit.PRIVATE_KEY not in out
    assert "Permission denied" in out


def test_a_project_may_make_it_stricter(kit, make_crab):
    crab = make_crab("on")
    project = crab.work / ".crab"
    project.mkdir()
    (project / "config.toml").write_text('[plugins.sandbox]\nshell_escape = "sandbox"\n')
    out = _typed(crab, kit.WAIT)
    assert kit.PRIVATE_KEY not in out
    assert "Permission denied" in out
