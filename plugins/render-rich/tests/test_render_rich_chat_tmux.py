"""``crab chat`` with crab-render-rich, driven through a real terminal (tmux) and read off the screen."""

from __future__ import annotations

import json
from pathlib import Path

from crab_render_rich.chat_input import IDLE_HELP


def test_streaming_text_tool_call_and_status_line(chat_screen) -> None:
    screen = chat_screen(
        [
            [
                {"text": "Let me "},
                {"delay": 0.2},
                {"text": "wait **a bit**.\n\n"},
                {"tool": "slow", "args": {"seconds": 0.1}},
            ],
            [{"text": "All done: `ok`."}, {"usage": {"input_tokens": 1000, "output_tokens": 50}}],
        ]
    )
    screen.type("please wait")
    screen.keys("Enter")
    shown = screen.wait_for("All done: ok.")
    assert "Let me wait a bit." in shown  # Markdown rendered, not shown as source
    assert "✓ slow seconds=0.1" in shown
    assert "waited 0.1 s" in shown and "second line" in shown  # the head of the result
    assert "… 1 more line\n" in shown  # one line, not "1 lines"
    screen.wait_for("1.0k in · 50 out · $0.0011 · context 1% of 200k")
    assert "script" in shown.splitlines()[-1] or "script ·" in screen.text()


def test_an_approval_is_answered_with_the_keyboard(chat_screen, tmp_path: Path) -> None:
    screen = chat_screen(
        [
            [{"tool": "touch", "args": {"path": "made.txt"}}],
            [{"tool": "touch", "args": {"path": "refused.txt"}}],
            [{"text": "finished"}],
        ]
    )
    screen.type("make files")
    screen.keys("Enter")
    screen.wait_for("? allow write: touch")
    screen.wait_for("answer ❯")
    screen.type("y")
    screen.keys("Enter")
    screen.wait_for("allowed once")
    screen.wait_for("? allow write: touch")
    screen.wait_for("answer ❯")
    screen.type("nope")  # typed on the answer line, then Ctrl-C: no, and the line is not kept
    screen.wait_for("answer ❯ nope")
    screen.keys("C-c")
    screen.wait_for("finished")
    assert "denied: touch" in screen.text()
    prompt = screen.wait_for(lambda text: "script ·" in text).rstrip().splitlines()
    assert [row for row in prompt if row.startswith(("❯", "↳"))][-1].strip() == "❯"  # "nope" not left there
    assert (tmp_path / "work" / "made.txt").exists()
    assert not (tmp_path / "work" / "refused.txt").exists()
    assert "✗ touch" in screen.text()  # the refusal is the tool's (red) error result


def test_keys_typed_ahead_never_answer_the_permission_question(chat_screen, tmp_path: Path) -> None:
    """Type-ahead during a running tool, and keys pressed the moment the question appears, are the
    user's draft, not the answer; only a word typed once the answer line shows, with Enter, is."""
    screen = chat_screen(
        [
            [{"tool": "slow", "args": {"seconds": 2}}],
            [{"tool": "touch", "args": {"path": "made.txt"}}],
            [{"text": "finished"}],
        ]
    )
    screen.type("go")
    screen.keys("Enter")
    screen.wait_for("slow seconds=2")
    screen.type("anything ")  # half a message, typed while the tool runs
    shown = screen.wait_for("? allow write: touch")
    screen.type("new? aaaa")  # the user types on: 'n' once meant "no", 'a' "for the session"
    screen.keys("Enter")
    question = next(line for line in shown.splitlines() if "? allow write" in line)
    assert question.startswith("? allow write: touch")  # on its own line, not glued to the draft
    screen.wait_for("kept for after the question: anything")
    screen.wait_for("answer ❯")
    screen.type("aaaa")  # read the question now: still not an answer
    screen.keys("Enter")
    screen.wait_for("not an answer: 'aaaa'")
    text = screen.text()
    assert "allowed" not in text and "denied" not in text
    assert not (tmp_path / "work" / "made.txt").exists()
    screen.type("y")
    screen.keys("Enter")
    screen.wait_for("allowed once: touch")
    screen.wait_for("finished")
    assert (tmp_path / "work" / "made.txt").exists()
    assert "write for this session" not in screen.text().split("allowed once")[-1]
    prompt = screen.wait_for(lambda text: any(line.startswith("❯ anything") for line in text.splitlines()))
    assert "allowed write for this session" not in prompt  # and the draft came back to the prompt


def test_a_steering_message_typed_during_a_slow_tool_reaches_the_next_request(chat_screen, sent_requests) -> None:
    screen = chat_screen(
        [
            [{"text": "starting"}, {"tool": "slow", "args": {"seconds": 3}}],
            [{"text": "turned left"}],
        ]
    )
    screen.type("go")
    screen.keys("Enter")
    screen.wait_for("slow seconds=3")
    screen.type("go left instead")
    screen.keys("Enter")
    screen.wait_for("steer (pending): go left instead")
    screen.wait_for("turned left")
    sent = sent_requests()
    assert len(sent) == 2
    last = sent[1]
    assert last[-1]["role"] == "user" and "go left instead" in json.dumps(last[-1])
    assert any(m["role"] == "tool" for m in last)  # the tool call finished before the steer joined
    assert "steer (pending)" not in screen.text().split("turned left")[-1]


def test_ctrl_c_stops_the_turn_and_the_session_goes_on(chat_screen, sent_requests) -> None:
    screen = chat_screen(
        [
            [{"text": "on it"}, {"tool": "slow", "args": {"seconds": 60}}],
            [{"text": "second answer"}],
        ]
    )
    screen.type("long job")
    screen.keys("Enter")
    screen.wait_for("slow seconds=60")
    screen.keys("C-c")
    screen.wait_for("turn stopped")
    screen.type("and now?")
    screen.keys("Enter")
    screen.wait_for("second answer")
    sent = sent_requests()
    # the interrupted call was paired with a result before the next request (the session is valid)
    calls = [c["id"] for m in sent[1] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = [m.get("call_id") or m.get("tool_call_id") for m in sent[1] if m["role"] == "tool"]
    assert calls and calls == results


def test_ctrl_c_twice_at_an_empty_prompt_leaves(chat_screen) -> None:
    screen = chat_screen([[{"text": "hi"}]])
    screen.keys("C-c")
    screen.wait_for("Ctrl-C again")
    screen.keys("C-c")
    screen.wait_for("CRAB-TEST-EXITED 0")


def test_ctrl_d_leaves_and_history_and_continue_survive(chat_screen, tmp_path: Path) -> None:
    screen = chat_screen([[{"text": "first answer"}]], "--store", "memory")
    screen.type("remember this line")
    screen.keys("Enter")
    screen.wait_for("first answer")
    screen.keys("C-d")
    screen.wait_for("CRAB-TEST-EXITED 0")
    assert "remember this line" in (tmp_path / "home" / "chat_history").read_text()


def test_multi_line_input_completion_and_the_thinking_toggle(chat_screen, sent_requests) -> None:
    screen = chat_screen([[{"thinking": "secret plan here"}, {"text": "answered"}]])
    screen.type("/thin")
    screen.keys("Tab")
    screen.wait_for("❯ /thinking")
    screen.keys("Enter")
    screen.wait_for("thinking is shown")
    screen.type("line one")
    screen.keys("C-j")
    screen.type("line two")
    screen.keys("Enter")
    shown = screen.wait_for("answered")
    assert "secret plan here" in shown  # shown, as toggled
    (request,) = sent_requests()
    assert request[-1]["content"] == "line one\nline two"


def test_output_follows_a_resized_terminal(chat_screen) -> None:
    screen = chat_screen([[{"text": "above\n\n---\n\nbelow"}]])
    screen.tmux("resize-window", "-t", screen.name, "-x", "50", "-y", "30")
    screen.wait_for(lambda text: len(text.rstrip().splitlines()[-1]) <= 50)  # the toolbar redrawn
    screen.type("rule please")
    screen.keys("Enter")
    shown = screen.wait_for("below")
    rule = next(line for line in shown.splitlines() if line.strip() and not line.strip().strip("-─"))
    assert 40 <= len(rule.strip()) <= 50  # drawn at the new width (joined wrapped lines would be 100)


MARKDOWN = "Intro line.\n\n- one\n- two\n\nMiddle line.\n\n```py\nx = 1\n```\n\n> quoted\n\nLast line."
SHOWN = ["Intro line.", "", "• one", "• two", "", "Middle line.", "", "x = 1", "", "▌ quoted", "", "Last line."]


def answer_rows(rows: list[str], last: bool = False) -> list[str]:
    """The rows of one streamed ``MARKDOWN`` answer (the first or the last on screen), stripped."""
    starts = [i for i, row in enumerate(rows) if row.strip() == "Intro line."]
    start = starts[-1 if last else 0]
    end = next(i for i in range(start, len(rows)) if rows[i].strip() == "Last line.")
    return [row.strip() for row in rows[start : end + 1]]


def test_markdown_blocks_are_one_blank_line_apart_even_after_a_resize(chat_screen) -> None:
    screen = chat_screen([[{"text": MARKDOWN}], [{"text": MARKDOWN}]])
    screen.type("show me")
    screen.keys("Enter")
    screen.wait_for("Last line.")
    assert answer_rows(screen.rows()) == SHOWN
    screen.tmux("resize-window", "-t", screen.name, "-x", "50", "-y", "30")
    screen.wait_for(lambda text: len(text.rstrip().splitlines()[-1]) <= 50)
    assert answer_rows(screen.rows()) == SHOWN  # what was printed, rewrapped by the terminal
    screen.type("again")
    screen.keys("Enter")
    screen.wait_for(lambda text: text.count("Last line.") == 2)
    assert answer_rows(screen.rows(), last=True) == SHOWN  # and what is printed at the new width


def test_a_command_typed_while_the_answer_streams_is_shown_after_it(chat_screen) -> None:
    screen = chat_screen([[{"text": "First half of "}, {"delay": 1.5}, {"text": "the answer.\n\nSecond paragraph."}]])
    screen.type("talk")
    screen.keys("Enter")
    screen.wait_for("First half of")
    screen.type("/thinking")
    screen.keys("Enter")
    shown = screen.wait_for("thinking is shown")
    shown = screen.wait_for("Second paragraph.")
    assert "First half of the answer." in shown  # the sentence was not cut by the command's output
    assert shown.index("thinking is shown") > shown.index("Second paragraph.")


def test_at_40_columns_the_toolbar_and_the_question_break_between_words(chat_screen) -> None:
    screen = chat_screen([[{"tool": "touch", "args": {"path": "made.txt"}}], [{"text": "done"}]])
    screen.tmux("resize-window", "-t", screen.name, "-x", "40", "-y", "24")
    whole = {" · ".join(IDLE_HELP[:n]) for n in range(1, len(IDLE_HELP) + 1)}
    # until the chat redraws, tmux shows the wider toolbar cut at the new edge: wait for the redraw
    # (whole parts only), which a cut word never is
    shown = screen.wait_for(
        lambda text: (
            text.rstrip().splitlines()[-1].strip() in whole and len(text.rstrip().splitlines()[-1].strip()) <= 40
        )
    )
    toolbar = shown.rstrip().splitlines()[-1].strip()
    assert toolbar in whole and len(toolbar) <= 40
    screen.type("go")
    screen.keys("Enter")
    screen.wait_for("answer ❯")
    rows = screen.rows()
    start = next(i for i, row in enumerate(rows) if row.startswith("? allow"))
    end = next(i for i in range(start, len(rows)) if rows[i].startswith("answer ❯"))
    question = rows[start:end]
    said = (
        '? allow write: touch(path="made.txt") y Enter: once · a Enter: write for this session · n Enter or Ctrl-C: no'
    )
    assert all(len(row) <= 40 for row in question)
    assert all(word in said.split() for row in question for word in row.split()), question  # no word cut
    assert " ".join(" ".join(question).split()).replace(" ·", "") == said.replace(" ·", "")
    assert rows[-1].strip() in {"a permission question", "a permission question · y, a or n, then Enter"}


def test_continue_replays_the_last_exchanges_as_rendered_markdown(chat_screen) -> None:
    answer = "Here is **bold** and `code`:\n\n- one\n- two\n\n```sh\n> not a question\n```\n\nThat is all."
    screen = chat_screen([[{"text": answer}]], "--store", "rrfile")
    screen.type("show me")
    screen.keys("Enter")
    screen.wait_for("That is all.")
    screen.keys("C-d")
    screen.wait_for("CRAB-TEST-EXITED 0")
    again = chat_screen([[{"text": "unused"}]], "--store", "rrfile", "-c")
    rows = again.wait_for("That is all.").splitlines()
    start = next(i for i, row in enumerate(rows) if row.startswith("session "))
    end = next(i for i, row in enumerate(rows) if row.startswith("That is all."))
    assert [row.rstrip() for row in rows[start + 1 : end + 1]] == [
        "❯ show me",
        "Here is bold and code:",  # rendered as the live view does, not as Markdown source
        "",
        " • one",
        " • two",
        "",
        " > not a question",  # inside the answer's code block: not taken for an input
        "",
        "That is all.",
    ]


def test_a_tools_question_is_answered_with_the_keyboard_after_it_was_shown(chat_screen, sent_requests) -> None:
    screen = chat_screen(
        [
            [{"tool": "pick", "args": {"question": "Which database?", "choices": ["SQLite", "PostgreSQL"]}}],
            [{"text": "going with it"}],
        ]
    )
    screen.type("set it up")
    screen.keys("Enter")
    screen.wait_for("? Which database?")
    screen.type("1")  # the moment it appears: the draft's, not the answer
    screen.keys("Enter")
    screen.wait_for("answer ❯")
    screen.type("MariaDB")  # not one of the closed choices
    screen.keys("Enter")
    screen.wait_for("not an answer: 'MariaDB'")
    screen.type("2")
    screen.keys("Enter")
    screen.wait_for("answered: PostgreSQL")
    screen.wait_for("going with it")
    tool_results = [m for m in sent_requests()[-1] if m.get("role") == "tool"]
    assert [m["content"] for m in tool_results] == ["picked PostgreSQL"]


def test_the_plan_is_a_checklist_that_updates_in_place(chat_screen) -> None:
    steps = ["read the parser", "fix the bug", "add a test"]
    screen = chat_screen(
        [
            [{"tool": "plan", "args": {"steps": steps, "current": 0, "pause": 1.5}}],
            [{"tool": "plan", "args": {"steps": steps, "current": 1, "pause": 1.5}}],
            [{"text": "all planned"}],
        ]
    )
    screen.type("plan it")
    screen.keys("Enter")
    screen.wait_for("plan 0/3")
    shown = screen.wait_for("plan 1/3")
    assert "plan 0/3" not in shown  # redrawn in place, not printed again below
    assert "✓ read the parser" in shown and "▸ fix the bug" in shown and "○ add a test" in shown
    final = screen.wait_for("all planned")
    assert final.count("plan 1/3") == 1  # printed once into the scrollback when the turn ended
