"""Core's plain ``crab chat`` (no live input) in a real terminal (tmux): the welcome lines, ``/edit``
with ``EDITOR`` set to a small script, ``/new`` and ``/clear``; the ``-r`` picker off a terminal."""

from __future__ import annotations

import stat
from pathlib import Path

from crab.testing import run_cli


def editor_script(tmp_path: Path) -> Path:
    """An ``$EDITOR`` that appends `` +edited`` to the file it is given (what a person would save)."""
    script = tmp_path / "editor.sh"
    script.write_text('#!/bin/sh\nprintf \'%s +edited\' "$(cat "$1")" > "$1"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_the_welcome_lines_name_the_folder_permission_mode_and_store(plain_chat) -> None:
    screen = plain_chat([[{"text": "unused"}]])
    shown = screen.text()
    assert "permissions ask" in shown and "store memory" in shown and "/work" in shown


def test_edit_sends_what_the_editor_saved(plain_chat, tmp_path: Path) -> None:
    script = editor_script(tmp_path)
    screen = plain_chat([[{"text": "got it"}]], env={"EDITOR": str(script), "VISUAL": ""})
    screen.type("/edit a draft")
    screen.wait_for(lambda text: "got it" in text, "the answer to the edited input")
    assert "crab> a draft +edited" in screen.text()  # what was sent is shown


def test_an_editor_that_cannot_start_is_one_line_and_the_chat_goes_on(plain_chat) -> None:
    screen = plain_chat([[{"text": "still here"}]], env={"EDITOR": "/nonexistent/editor", "VISUAL": ""})
    screen.type("/edit")
    screen.wait_for(lambda text: "could not start the editor '/nonexistent/editor'" in text, "the one-line hint")
    screen.type("hello")
    screen.wait_for(lambda text: "still here" in text, "the next turn")
    assert "Traceback" not in screen.text()


def test_new_and_clear_switch_to_a_fresh_session(plain_chat) -> None:
    screen = plain_chat([[{"text": "first answer"}], [{"text": "second answer"}]])
    screen.type("hello")
    screen.wait_for(lambda text: "first answer" in text, "the first answer")
    screen.type("/new")
    screen.wait_for(lambda text: "stays in the store" in text, "the new session")
    screen.type("/session")
    screen.wait_for(lambda text: "entries: 0" in text or "messages in context: 0" in text, "an empty session")
    screen.type("/clear")
    screen.wait_for(lambda text: "first answer" not in text and "new session" in text, "a cleared screen")


def test_r_alone_off_a_terminal_says_what_to_pass(crab_home) -> None:
    result = run_cli("chat", "-r", "--plugins", "")
    assert result.exit_code == 2
    assert "crab chat -r lists sessions to pick from on a terminal: pass -r ID" in result.stderr
    assert "Traceback" not in result.stderr
