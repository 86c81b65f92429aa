"""``!cmd`` goes through the permission gate as an exec call, is one line, and stays local."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab._builtin.shell import KEYBOARD_TOOL, SHELL_TOOL, one_line
from crab._contracts.events import CommandOutput
from crab._contracts.interception import Deny, PermissionRequest
from crab._host.hookspecs import hookimpl


def test_one_line_accepts_a_single_line_only():
    assert one_line("  echo hi  \n") == "echo hi"
    assert one_line("echo a; echo b") == "echo a; echo b"
    assert one_line("echo a\necho b") is None
    assert one_line("echo a\recho b") is None  # every line end counts, not only \n
    assert one_line("echo a\u2028echo b") is None


def _ran(work: Path) -> bool:
    return (work / "ran.txt").exists()


def test_ask_mode_with_nobody_to_ask_refuses_and_runs_nothing(crab_agent):
    h = crab_agent()  # ask mode, ask=None: a piped or scripted run
    outcome = h.run("!echo x > ran.txt")
    assert outcome.stop == "command" and outcome.error
    assert "exec permission" in outcome.text and "--yolo" in outcome.text
    assert not _ran(h.workspace)
    assert h.events_of(CommandOutput)[-1].is_error


def test_yolo_runs_the_command(crab_agent):
    h = crab_agent(config={"crab.permissions": "yolo"})
    outcome = h.run("!echo x > ran.txt && echo done")
    assert outcome.error is None and outcome.text == "done"
    assert _ran(h.workspace)


def test_an_agent_given_no_shell_refuses_the_line_and_runs_nothing(crab_agent):
    # `!cmd` is core's built-in (crab._builtin.shell), which the composition root gives the agent;
    # an agent without it (crab info's) says so instead of running anything.
    h = crab_agent(config={"crab.permissions": "yolo"})
    h.agent.shell = None
    outcome = h.run("!echo x > ran.txt")
    assert outcome.stop == "command" and outcome.error == "!commands do not run here"
    assert not _ran(h.workspace)
    assert h.events_of(CommandOutput)[-1].is_error


def test_read_only_refuses_even_at_the_keyboard(crab_agent):
    h = crab_agent(config={"crab.permissions": "read-only"})
    h.agent.keyboard = True
    outcome = h.run("!echo x > ran.txt")
    assert outcome.error and "read-only" in outcome.text
    assert not _ran(h.workspace)


@pytest.mark.parametrize(("answer", "runs"), [("once", True), ("deny", False)])
def test_ask_mode_asks_the_user_as_for_an_exec_tool(crab_agent, answer, runs):
    asked: list[PermissionRequest] = []

    async def ask(request: PermissionRequest):
        asked.append(request)
        return answer

    h = crab_agent(ask=ask)
    outcome = h.run("!echo x > ran.txt")
    assert [(r.tool, r.permission) for r in asked] == [(SHELL_TOOL, "exec")]
    assert "echo x > ran.txt" in asked[0].summary
    assert _ran(h.workspace) is runs
    assert (outcome.error is None) is runs


def test_typed_at_the_keyboard_needs_no_second_question(crab_agent):
    h = crab_agent()  # ask mode and nobody to ask: only the keyboard flag makes the typed line count
    h.agent.keyboard = True
    outcome = h.run("!echo typed")
    assert outcome.error is None and outcome.text == "typed"


@pytest.mark.parametrize("keyboard", [False, True])
def test_several_lines_are_refused_whole_and_none_runs_as_shell(crab_agent, keyboard):
    h = crab_agent(config={"crab.permissions": "yolo"})
    h.agent.keyboard = keyboard
    outcome = h.run("!echo one > one.txt\nPlease summarize.\necho ran > ran.txt\n")
    assert outcome.error and "one line" in outcome.text and "3 lines" in outcome.text
    assert not (h.workspace / "one.txt").exists()
    assert not _ran(h.workspace)
    assert h.requests == []  # nor does the rest go to the model


def test_remote_channels_never_run_it(crab_agent):
    h = crab_agent(config={"crab.permissions": "yolo"}, local=False)
    outcome = h.run("!echo x > ran.txt")
    assert outcome.error and "local terminal" in outcome.text
    assert not _ran(h.workspace)


class _Policy:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    @hookimpl
    def crab_before_tool_call(self, call, tool, ctx):
        self.seen.append((call.name, call.arguments.get("command", "")))
        if "rm " in call.arguments.get("command", ""):
            return Deny("policy: no rm")
        return None


class _Broken:
    @hookimpl
    def crab_before_tool_call(self, call, tool, ctx):
        raise RuntimeError("boom")


def test_policy_plugins_see_it_like_a_tool_call(crab_agent):
    policy = _Policy()
    h = crab_agent(config={"crab.permissions": "yolo"}, plugins={"policy": policy})
    assert h.run("!rm -f x").text == "policy: no rm"
    assert h.run("!echo ok").text == "ok"
    assert policy.seen == [(SHELL_TOOL, "rm -f x"), (SHELL_TOOL, "echo ok")]


def test_a_broken_checker_refuses(crab_agent):
    h = crab_agent(config={"crab.permissions": "yolo"}, plugins={"broken": _Broken()})
    outcome = h.run("!echo x > ran.txt")
    assert outcome.error and "broken" in outcome.text
    assert not _ran(h.workspace)


def test_a_later_line_starting_with_bang_is_never_shell(crab_agent):
    h = crab_agent([[{"text": "summarized"}]], config={"crab.permissions": "yolo"})
    outcome = h.run("Please summarize.\n!echo x > ran.txt")
    assert outcome.stop == "end" and outcome.text == "summarized"
    assert not _ran(h.workspace)


@pytest.mark.parametrize(("keyboard", "tool"), [(False, SHELL_TOOL), (True, KEYBOARD_TOOL)])
def test_it_starts_through_the_command_wrappers_saying_whether_it_was_typed(crab_agent, keyboard, tool):
    from crab import processes

    seen: list[processes.Launch] = []

    def wrapper(launch: processes.Launch) -> list[str]:
        seen.append(launch)
        return ["sh", "-c", "echo wrapped"]

    h = crab_agent(config={"crab.permissions": "yolo"})
    h.agent.keyboard = keyboard
    remove = processes.add_command_wrapper(wrapper)
    try:
        outcome = h.run("!echo plain")
    finally:
        remove()
    assert outcome.text == "wrapped"
    ((launch,),) = [seen]
    assert (launch.argv, launch.tool, launch.permission) == (("sh", "-c", "echo plain"), tool, "exec")
    assert launch.cwd == h.workspace and launch.context.workspace == h.workspace


def test_a_wrapper_that_refuses_it_is_the_result(crab_agent):
    from crab import ToolError, processes

    def refuse(launch: processes.Launch) -> None:
        raise ToolError("refused: no sandbox here")

    h = crab_agent(config={"crab.permissions": "yolo"})
    remove = processes.add_command_wrapper(refuse)
    try:
        outcome = h.run("!echo x > ran.txt")
    finally:
        remove()
    assert outcome.error and outcome.text == "refused: no sandbox here"
    assert not _ran(h.workspace)
