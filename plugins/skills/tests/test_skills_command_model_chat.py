"""A user command's ``model:`` in ``crab chat`` (core's plain prompt, in tmux, crab.testing's
``crab_screen``): the command's turn on its model, the next input on the session's, both said."""

from __future__ import annotations

import sys


def test_chat_runs_the_command_on_its_model_then_goes_back(crab_screen, skills_site, tmp_path):
    commands = tmp_path / "home" / "commands"
    commands.mkdir(parents=True)
    (commands / "deep.md").write_text("---\nmodel: big\n---\nThink hard about $ARGUMENTS.\n", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    skills_site.script([[{"text": "deep answer"}], [{"text": "plain answer"}]])
    command = [sys.executable, "-m", "crab", "chat", "--provider", "scripted", "-m", "scripted"]
    screen = crab_screen(command, cwd=work, env=skills_site.env("skills,scripted"), ready="crab>")
    screen.type("/deep the cache")
    screen.keys("Enter")
    shown = screen.wait_for("model: scripted/scripted again (/deep ran on scripted/big)")
    assert "/deep runs on scripted/big; the session goes back to scripted/scripted after it" in shown
    assert "deep answer" in shown
    screen.type("and now")
    screen.keys("Enter")
    screen.wait_for("plain answer")
    assert [request["model"] for request in skills_site.requests()] == ["big", "scripted"]
