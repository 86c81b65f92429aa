"""The session commands in ``crab chat`` with crab-render-rich, in a real terminal (tmux): /model
with Tab completion, /new and the /resume picker, ``crab chat -r``, the exit line, /clear, the
completion menu's descriptions, a plugin's ``@tiny:`` completions and Ctrl-G / ``/edit`` with
``EDITOR`` set to a small script."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

EXIT_LINE = re.compile(r"resume this session with: crab chat -r (\S+)")


def test_model_tab_completes_and_the_next_request_goes_to_it(chat_screen, models_asked) -> None:
    screen = chat_screen([[{"text": "first"}], [{"text": "second"}, {"usage": {"input_tokens": 1000}}]])
    screen.type("hi")
    screen.keys("Enter")
    screen.wait_for("first")
    screen.type("/model script-")
    screen.keys("Tab")
    screen.wait_for("❯ /model fake/script-b")
    screen.keys("Enter")
    screen.wait_for("model: fake/script-b from the next request on (context 50k, $3/M in, $6/M out)")
    screen.type("again")
    screen.keys("Enter")
    screen.wait_for("second")
    assert models_asked() == ["script", "script-b"]
    # The status line follows the switch: its model, its price, its window.
    screen.wait_for("script-b · 1.0k in · 0 out · $0.0030 · context 2% of 50.0k")
    screen.type("/cost")
    screen.keys("Enter")
    screen.wait_for("fake/script-b  1 call, 1,000 in, 0 out · $0.0030")


def test_the_completion_menu_shows_each_commands_description(chat_screen) -> None:
    screen = chat_screen([[{"text": "unused"}]])
    screen.type("/c")
    screen.keys("Tab")
    shown = screen.wait_for("tokens and cost of this session, per model")
    assert "start a fresh session and clear the screen" in shown
    assert "/compact" in shown and "/cost" in shown


def test_tab_completes_what_a_plugin_offers_for_an_at_word(chat_screen) -> None:
    screen = chat_screen([[{"text": "unused"}]])
    screen.type("read @tiny:")
    screen.keys("Tab")
    shown = screen.wait_for("tiny://pixel.png")  # the menu, each URI with what it is
    assert "note (text/plain)" in shown and "pixel (image/png)" in shown
    screen.keys("C-c")  # clears the line
    screen.wait_for(lambda text: "read @tiny" not in text)
    screen.type("read @tiny:tiny://n")
    screen.keys("Tab")
    screen.wait_for("❯ read @tiny:tiny://note")  # the only match, taken


def test_new_then_the_resume_picker_switches_back(chat_screen) -> None:
    screen = chat_screen([[{"text": "the first answer"}], [{"text": "in the new one"}]])
    screen.type("the first question")
    screen.keys("Enter")
    screen.wait_for("the first answer")
    screen.type("/new")
    screen.keys("Enter")
    found = re.search(r"new session (\S+); (\S+) stays in the store", screen.wait_for("stays in the store"))
    assert found
    fresh, first = found.groups()
    screen.type("/resume")
    screen.keys("Enter")
    listed = screen.wait_for("resume one with /resume N")
    assert re.search(rf"1\. {first} · \S+ · \d+ entries · the first question", listed), listed
    assert f"1. {fresh}" not in listed  # the session it is in is not offered
    screen.type("/resume 1")
    screen.keys("Enter")
    screen.wait_for(f"resumed session {first}")
    shown = screen.wait_for(f"session {first}:")
    assert "❯ the first question" in shown.split(f"resumed session {first}")[-1]  # the recap, as rendered
    screen.type("/session")
    screen.keys("Enter")
    screen.wait_for(lambda text: text.split("/session")[-1].count(f"session {first}") >= 1)


def test_leaving_prints_the_command_that_resumes_and_r_opens_the_picker(chat_screen, sent_requests) -> None:
    first = chat_screen([[{"text": "noted"}], [{"text": "back again"}]])
    first.type("remember the plan")
    first.keys("Enter")
    first.wait_for("noted")
    first.keys("C-d")
    exited = first.wait_for("CRAB-TEST-EXITED 0")
    found = EXIT_LINE.search(exited)
    assert found, exited
    session_id = found.group(1)
    picker = chat_screen([[{"text": "back again"}]], "-r", ready="resume which")
    listed = picker.text()
    assert re.search(rf"1\. {session_id} · \S+ · \d+ entries · remember the plan", listed)
    picker.type("1")
    picker.keys("Enter")
    picker.wait_for("Ctrl-T thinking")  # the live input's toolbar: the prompt is up
    picker.wait_for(f"session {session_id}:\n❯ remember the plan")  # the recap of the session it resumed
    assert f"session {session_id}" in picker.text()
    picker.type("and now?")
    picker.keys("Enter")
    picker.wait_for("back again")
    last = sent_requests()[-1]
    assert "remember the plan" in json.dumps(last)  # the resumed history went to the model


def test_r_with_an_id_resumes_directly(chat_screen) -> None:
    first = chat_screen([[{"text": "stored"}]])
    first.type("keep me")
    first.keys("Enter")
    first.wait_for("stored")
    first.keys("C-d")
    found = EXIT_LINE.search(first.wait_for("CRAB-TEST-EXITED 0"))
    assert found
    again = chat_screen([[{"text": "unused"}]], "-r", found.group(1))
    again.wait_for(f"session {found.group(1)}:\n❯ keep me")
    assert "resume which" not in again.text()


def test_clear_starts_afresh_and_clears_the_screen(chat_screen) -> None:
    screen = chat_screen([[{"text": "something to forget"}]])
    screen.type("say it")
    screen.keys("Enter")
    screen.wait_for("something to forget")
    screen.type("/clear")
    screen.keys("Enter")
    shown = screen.wait_for(lambda text: "something to forget" not in text and "new session" in text)
    assert "stays in the store" in shown


def editor_script(tmp_path: Path) -> Path:
    """An ``$EDITOR`` that appends `` +edited`` to the file it is given (what a person would save)."""
    script = tmp_path / "editor.sh"
    script.write_text('#!/bin/sh\nprintf \'%s +edited\' "$(cat "$1")" > "$1"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_ctrl_g_and_edit_open_the_editor_on_the_line(chat_screen, sent_requests, tmp_path: Path) -> None:
    script = editor_script(tmp_path)
    screen = chat_screen(
        [[{"text": "got the edit"}], [{"text": "got the second"}]], env={"EDITOR": str(script), "VISUAL": str(script)}
    )
    screen.type("draft line")
    screen.keys("C-g")
    screen.wait_for("❯ draft line +edited")  # back on the line, not sent yet
    assert sent_requests() == []
    screen.keys("Enter")
    screen.wait_for("got the edit")
    assert "draft line +edited" in json.dumps(sent_requests()[-1][-1])
    screen.type("/edit second")
    screen.keys("Enter")
    screen.wait_for("❯ second +edited")
    screen.keys("Enter")
    screen.wait_for("got the second")
    assert "second +edited" in json.dumps(sent_requests()[-1][-1])
