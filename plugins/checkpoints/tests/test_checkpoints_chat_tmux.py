"""``crab chat`` in a real terminal (tmux): the permission question shows the diff a write would
apply, and ``/undo`` then puts the file back and says which; ``crab checkpoints list`` lists it."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from crab.testing import ScriptedSite, TmuxScreen

HERE = Path(__file__).parent
PROMPT = "answer (y, a or n, then Enter)>"


def environment(tmp_path: Path, replies: list[object]) -> dict[str, str]:
    """A ``crab`` subprocess's environment: crab.testing's scripted provider ``fake`` replaying
    ``replies``, the test plugin ``ckfake`` (entry point of checkpoints_fakes) and this plugin."""
    site = ScriptedSite(tmp_path)
    site.add_plugin("ckfake", "checkpoints_fakes", (HERE / "checkpoints_fakes.py").read_text(encoding="utf-8"))
    site.script(replies)
    return site.env("fake,ckfake,checkpoints")


def enter(screen: TmuxScreen, text: str) -> None:
    screen.type(text)
    screen.keys("Enter")


def test_the_question_shows_the_diff_and_undo_puts_the_file_back(
    repo: Path, tmp_path: Path, git, crab_screen: Callable[..., TmuxScreen]
) -> None:
    replies = [
        [{"tool": "put", "args": {"path": "a.txt", "content": "a rewritten by the model\n"}}],
        [{"text": "changed it"}],
    ]
    env = environment(tmp_path, replies)
    command = [sys.executable, "-m", "crab", "chat", "--provider", "fake", "-m", "script"]
    screen = crab_screen(command, cwd=repo, env={**env, "TERM": "xterm-256color"}, width=80, ready="crab> ")
    enter(screen, "change a")
    shown = screen.wait_for(PROMPT)
    assert "? allow write: put" in shown
    assert "  -a committed" in shown and "  +a rewritten by the model" in shown  # the diff it would apply
    enter(screen, "y")
    screen.wait_for("changed it")
    assert (repo / "a.txt").read_text() == "a rewritten by the model\n"
    enter(screen, "/undo")
    screen.wait_for("undid the last turn ('change a'): restored a.txt")
    assert (repo / "a.txt").read_text() == "a committed\n"
    enter(screen, "/undo")
    screen.wait_for("nothing to undo")


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
