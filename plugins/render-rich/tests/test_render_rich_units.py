"""The pure parts: Markdown block splitting, completion, the plugin's hooks and command."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import crab
import crab_render_rich
from crab.messages import ToolCall
from crab.testing import ScriptedProvider
from crab_render_rich import view
from crab_render_rich.blocks import BlockSplitter
from crab_render_rich.completion import command_matches, make_completer, path_matches, plugin_matches
from crab_render_rich.renderer import PREFERENCES
from hypothesis import given
from hypothesis import strategies as st


def split(text: str, step: int) -> tuple[list[str], str]:
    splitter = BlockSplitter()
    blocks: list[str] = []
    for i in range(0, len(text), step):
        blocks += splitter.feed(text[i : i + step])
    return blocks, splitter.finish()


def test_blocks_end_at_blank_lines_headings_and_closed_fences() -> None:
    text = "# Title\npara one\nstill one\n\n```py\nx = 1\n\ny = 2\n```\nafter"
    blocks, rest = split(text, 3)
    assert blocks == ["# Title\n", "para one\nstill one\n", "```py\nx = 1\n\ny = 2\n```\n"]
    assert rest == "after"


def test_an_unclosed_fence_stays_the_tail() -> None:
    splitter = BlockSplitter()
    assert splitter.feed("```\ncode\n\nmore\n") == []
    assert splitter.in_code and splitter.tail == "```\ncode\n\nmore\n"


@given(st.text(alphabet="ab #`~\n", max_size=200), st.integers(min_value=1, max_value=9))
def test_splitting_loses_and_repeats_nothing(text: str, step: int) -> None:
    blocks, rest = split(text, step)
    joined = "".join(blocks) + rest
    assert [c for c in joined if not c.isspace()] == [c for c in text if not c.isspace()]


def test_command_and_path_completion(tmp_path: Path) -> None:
    assert command_matches("/h", ["help", "handoff", "tools"]) == ["/handoff", "/help"]
    assert command_matches("/he", ["help", "handoff", "tools"]) == ["/help"]
    assert command_matches("/help x", ["help"]) == []
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / ".hidden").write_text("")
    assert path_matches("@s", tmp_path) == ["@src/"]
    assert path_matches("@src/m", tmp_path) == ["@src/main.py"]
    assert path_matches("@", tmp_path) == ["@src/"]
    assert path_matches("@.h", tmp_path) == ["@.hidden"]


def test_an_at_word_asks_the_plugins_and_a_failure_offers_nothing() -> None:
    asked: list[str] = []

    def complete(word: str) -> list[tuple[str, str]]:
        asked.append(word)
        return [("@tiny:tiny://note", "note"), (word, "what is typed already")]

    assert plugin_matches("@tiny:ti", complete) == [("@tiny:tiny://note", "note")]
    assert plugin_matches("@t", complete) == [("@tiny:tiny://note", "note")]
    assert plugin_matches("@", complete) == plugin_matches("tiny:", complete) == plugin_matches("", complete) == []
    assert asked == ["@tiny:ti", "@t"]

    def broken(word: str) -> list[tuple[str, str]]:
        raise RuntimeError("gone")

    assert plugin_matches("@tiny:", broken) == []


def test_the_completer_offers_paths_then_what_plugins_offer(tmp_path: Path) -> None:
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    (tmp_path / "tiny-notes.txt").write_text("")
    offered = {"@ti": [("@tiny:", "MCP server tiny")], "@tiny:tiny://n": [("@tiny:tiny://note", "note")]}
    completer: Any = make_completer([], tmp_path, complete=lambda word: offered.get(word, []))

    def shown(text: str) -> list[tuple[str, int, str]]:
        found = completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
        return [(c.text, c.start_position, c.display_meta_text) for c in found]

    assert shown("read @ti") == [("@tiny-notes.txt", -3, ""), ("@tiny:", -3, "MCP server tiny")]
    assert shown("read @tiny:tiny://n") == [("@tiny:tiny://note", -14, "note")]
    assert shown("@tiny:tiny://n ") == []  # the word ended
    assert path_matches("@tiny:tiny://n", tmp_path) == path_matches("@missing/x", tmp_path) == []  # no such folder


def test_completion_never_lists_outside_the_workspace(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("")
    (work / "link").symlink_to(tmp_path)
    assert path_matches("@../", work) == []
    assert path_matches("@/etc/", work) == []
    assert path_matches("@~/", work) == []
    assert path_matches("@link/", work) == []


def test_the_plugin_offers_an_interactive_renderer_with_a_chat_input() -> None:
    (spec,) = crab_render_rich.crab_renderers(None)  # type: ignore[arg-type]
    assert spec.name == "rich" and spec.interactive and spec.chat_input is not None


def test_thinking_command_toggles_the_shared_preference() -> None:
    before = PREFERENCES.show_thinking
    try:
        result = asyncio.run(crab_render_rich.toggle_thinking(None, "show"))  # type: ignore[arg-type]
        assert PREFERENCES.show_thinking and "shown" in result.text
        result = asyncio.run(crab_render_rich.toggle_thinking(None, ""))  # type: ignore[arg-type]
        assert not PREFERENCES.show_thinking
        asyncio.run(crab_render_rich.toggle_thinking(None, "on"))  # type: ignore[arg-type]
        result = asyncio.run(crab_render_rich.toggle_thinking(None, "fold"))  # type: ignore[arg-type]
        assert not PREFERENCES.show_thinking and "folded" in result.text
        assert asyncio.run(crab_render_rich.toggle_thinking(None, "maybe")).is_error  # type: ignore[arg-type]
    finally:
        PREFERENCES.show_thinking = before


class Thinker(ScriptedProvider):
    def thinks(self, model: str) -> bool:
        return True


def test_thinking_with_a_level_sets_it_and_show_or_fold_stays_the_renderers(crab_home: Path) -> None:
    """With this plugin loaded, /thinking is this plugin's (it takes crab's on purpose), levels
    still reach the requests through crab's command, and show/fold are not read as levels."""
    quiet = {"user_config": False, "project_config": False, "environment": False}
    provider, before = Thinker([[{"text": "a"}]], loop=True), PREFERENCES.show_thinking
    try:
        objects = {"render-rich": crab_render_rich}
        with crab.Agent(provider=provider, plugins=[], plugin_objects=objects, **quiet) as agent:
            session = agent.run_sync("one").session_id
            assert "thinking: high" in agent.run_sync("/thinking high", session=session).text
            agent.run_sync("two", session=session)
            PREFERENCES.show_thinking = False
            assert agent.run_sync("/thinking show", session=session).text == "thinking is shown"
            assert agent.run_sync("/thinking off", session=session).text.startswith("thinking: off")
            agent.run_sync("three", session=session)
            assert PREFERENCES.show_thinking  # "off" is a level, not "fold"
    finally:
        PREFERENCES.show_thinking = before
    assert [r.options.get("thinking") for r in provider.requests] == [None, "high", "off"]


def test_loading_the_plugin_imports_neither_rich_nor_prompt_toolkit() -> None:
    code = (
        "import sys, crab_render_rich; crab_render_rich.crab_renderers(None); crab_render_rich.crab_commands(None);"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'prompt_toolkit')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_crab_run_keeps_plain_and_renderer_picks_rich(tmp_path: Path, fake_env) -> None:
    env = fake_env([[{"text": "hello"}, {"tool": "slow", "args": {"seconds": 0}}], [{"text": "bye"}]])

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "crab", "run", "--provider", "fake", "-m", "script", *args, "hi"]
        return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)

    plain = run()
    assert plain.returncode == 0, plain.stderr
    assert "→ slow(" in plain.stderr and "hello" in plain.stdout
    rich = run("--renderer", "rich")
    assert rich.returncode == 0, rich.stderr
    assert "✓ slow seconds=0" in rich.stderr and "\x1b" not in rich.stdout + rich.stderr
    assert rich.stdout == "hello\nbye\n"  # a progress line ends the line it interrupts, as plain does
    wrong = run("--renderer", "ricj")
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines() == [
        "crab: no renderer named 'ricj' is loaded. Did you mean: rich? Available: jsonl, plain, rich "
        "(see `crab plugins list`)."
    ]


def test_doctor_names_the_renderer_of_run_and_of_chat(fake_env) -> None:
    # Installed, rich is chat's renderer and not run's: doctor says both, not a bare "plain".
    env = fake_env([[{"text": "hello"}]])
    command = [sys.executable, "-m", "crab", "doctor", "--provider", "fake", "-m", "script"]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert "ok    renderer: plain (crab chat: rich)" in done.stdout.splitlines(), done.stdout + done.stderr


def test_counts_agree_with_their_noun() -> None:
    call = ToolCall("c", "read", {"path": "a"})
    assert "· 1 line\n" in view.tool_done(call, "read", "only\n", False, 0.1).plain + "\n"
    four = view.tool_done(call, "read", "1\n2\n3\n4", False, 0.1).plain
    assert "· 4 lines" in four and four.endswith("… 1 more line")
    assert view.tool_done(call, "read", "1\n2\n3\n4\n5", False, 0.1).plain.endswith("… 2 more lines")


def test_a_recap_splits_into_inputs_and_answers() -> None:
    from crab_render_rich.recap import Part, recap_parts

    text = "… earlier in session s1:\n> first\nan **answer**\n\n```\n> kept\n```\n> second\n> third\nlast\n"
    assert recap_parts(text) == [
        Part("header", "… earlier in session s1:"),
        Part("said", "first"),
        Part("answer", "an **answer**\n\n```\n> kept\n```"),
        Part("said", "second"),
        Part("said", "third"),
        Part("answer", "last"),
    ]


def test_lines_fit_by_whole_parts_and_words() -> None:
    parts = ["Enter send", "Ctrl-J new line", "Tab complete /cmd @file"]
    assert view.fit(parts, 40) == "Enter send · Ctrl-J new line"
    assert view.fit(parts, 7) == "Enter…"  # a first part too wide alone: cut after a word
    assert view.fit(["a very long first part"], 12) == "a very long…"
    keys = ["y Enter: once", "a Enter: exec for this session", "n Enter or Ctrl-C: no"]
    assert view.pack(keys, 30) == [
        "  y Enter: once",
        "  a Enter: exec for this",
        "  session",
        "  n Enter or Ctrl-C: no",
    ]
    assert view.pack(keys, 80) == ["  y Enter: once · a Enter: exec for this session · n Enter or Ctrl-C: no"]


def test_a_long_plan_folds_its_done_steps_and_its_pending_tail() -> None:
    from crab.events import PlanItem
    from crab_render_rich.checklist import checklist_lines

    items = [PlanItem(f"step {n}", "done") for n in range(4)]
    items += [PlanItem("step 4", "in_progress"), *(PlanItem(f"step {n}", "pending") for n in range(5, 12))]
    lines = [text for text, _ in checklist_lines(items, limit=5)]
    assert lines == ["plan 4/12", "  ✓ 4 done", "  ▸ step 4", "  ○ step 5", "  ○ step 6", "  … 5 more"]
    short = [text for text, _ in checklist_lines(items[:3], limit=5)]
    assert short == ["plan 3/3", "  ✓ step 0", "  ✓ step 1", "  ✓ step 2"]
    assert checklist_lines([]) == [("plan cleared", "dim")]
