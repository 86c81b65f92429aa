"""What a newcomer meets first, with the real ``crab`` command: the hint bare ``crab`` gives works
as printed, and an empty session listing with only the memory store says why."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path


def crab(args: list[str], home: Path, cwd: Path, plugins: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS=plugins, NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "crab", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_hint_of_bare_crab_is_a_command_that_works(tmp_path: Path) -> None:
    plugins = "provider-mock,tools-basic"
    bare = crab([], tmp_path / "home", tmp_path, plugins)
    assert bare.returncode == 2
    hinted = re.search(r"try (-m \S+)", bare.stderr)
    assert hinted, bare.stderr
    chat = crab(shlex.split(hinted.group(1)), tmp_path / "home", tmp_path, plugins, stdin="show me around\n")
    assert chat.returncode == 0, chat.stderr
    assert "scripted tour" in chat.stdout


def test_chat_options_before_another_command_are_one_line(tmp_path: Path) -> None:
    done = crab(["-m", "mock/tour", "run", "hi"], tmp_path / "home", tmp_path, "provider-mock")
    assert done.returncode == 2
    assert done.stderr == "crab: options before the command are `crab chat`'s: put them after it (crab run …)\n"


def test_with_only_the_memory_store_an_empty_listing_says_why(tmp_path: Path) -> None:
    home = tmp_path / "home"
    ran = crab(["run", "-m", "mock/tour", "hi"], home, tmp_path, "provider-mock,tools-basic")
    assert ran.returncode == 0, ran.stderr
    listed = crab(["sessions", "list"], home, tmp_path, "provider-mock")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == (
        "no sessions: the memory store keeps none once crab exits "
        "(pip install crab-tape-jsonl or crab-store-sqlite to keep them)\n"
    )
    again = crab(["run", "-c", "-m", "mock/tour", "hi"], home, tmp_path, "provider-mock,tools-basic")
    assert again.returncode == 0, again.stderr
    assert "no earlier session to continue: the memory store keeps none once crab exits" in again.stderr


def test_with_the_quickstarts_store_the_session_is_listed_and_continued(tmp_path: Path) -> None:
    home = tmp_path / "home"
    plugins = "provider-mock,tools-basic,tape-jsonl"
    assert crab(["run", "-m", "mock/tour", "hi"], home, tmp_path, plugins).returncode == 0
    listed = crab(["sessions", "list"], home, tmp_path, plugins)
    assert listed.returncode == 0, listed.stderr
    assert len(listed.stdout.splitlines()) == 1 and str(tmp_path) in listed.stdout
    again = crab(["run", "-c", "-m", "mock/tour", "hi"], home, tmp_path, plugins)
    assert "no earlier session" not in again.stderr


def test_every_command_help_lists_is_in_the_commands_doc(tmp_path: Path) -> None:
    """docs/commands.md names every command `/help` lists with the first-party plugins (it had lost
    the plugins' /jobs, /todo, /undo and /thinking)."""
    plugins = "provider-mock,tools-basic,skills,todo,checkpoints,render-rich,subagents,ask,hooks"
    shown = crab(["run", "-m", "mock/tour", "/help"], tmp_path / "home", tmp_path, plugins)
    assert shown.returncode == 0, shown.stderr
    names = re.findall(r"^\s+/(\w+)", shown.stdout, re.M)
    assert {"help", "jobs", "todo", "undo", "thinking", "skill"} <= set(names), shown.stdout
    doc = (Path(__file__).resolve().parents[1] / "docs" / "commands.md").read_text()
    assert [name for name in names if f"`/{name}" not in doc] == []
