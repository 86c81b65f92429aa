"""A command that runs a model turn (``/skill:name request``) answers with that turn's outcome.

Channels that show only the outcome (Telegram without streaming, ``crab run -o json``) would
otherwise get an empty command result in place of the model's answer.
"""

from __future__ import annotations

import crab
from crab._contracts.commands import Command, CommandContext, CommandResult
from crab._contracts.events import CommandOutput
from crab.testing import AgentHarness


async def _brief(ctx: CommandContext, args: str) -> CommandResult:
    outcome = await ctx.handle.handle_input(ctx.session, f"Briefing: {args}")
    if outcome.error:
        return CommandResult("the turn failed", is_error=True)
    return CommandResult("")


async def _quiet(ctx: CommandContext, args: str) -> CommandResult:
    return CommandResult("")


async def _report(ctx: CommandContext, args: str) -> CommandResult:
    await ctx.handle.handle_input(ctx.session, "go")
    return CommandResult("reported")


class _Plugin:
    @crab.hookimpl
    def crab_commands(self, config: object) -> list[Command]:
        return [
            Command("brief", "run a turn", _brief),
            Command("quiet", "says nothing", _quiet),
            Command("report", "run a turn and report", _report),
        ]


def test_a_command_that_ran_a_turn_answers_with_the_turns_text():
    harness = AgentHarness([[{"text": "the answer"}]], plugins={"briefing": _Plugin()})
    try:
        outcome = harness.run("/brief the plan")
        assert outcome.stop == "end"
        assert outcome.text == "the answer"
        assert outcome.error is None
        assert outcome.session_id == harness.session.id
        assert [e.text for e in harness.events_of(CommandOutput)] == [""]  # nothing shown twice
        quiet = harness.run("/quiet")  # a command that ran no turn keeps its own (empty) outcome
        assert quiet.stop == "command" and quiet.text == ""
    finally:
        harness.close()


def test_a_command_with_its_own_text_keeps_it():
    harness = AgentHarness([[{"text": "model text"}]], plugins={"briefing": _Plugin()})
    try:
        outcome = harness.run("/report")
        assert (outcome.stop, outcome.text) == ("command", "reported")
    finally:
        harness.close()


def test_a_long_lived_handle_keeps_no_outcomes():
    """A channel's handle lives as long as ``crab serve``: it must not collect every turn."""
    from crab._loop.handle import LoopHandle

    harness = AgentHarness([[{"text": "one"}], [{"text": "two"}]])
    try:
        handle = LoopHandle(harness.agent)
        harness.run_async(handle.handle_input(harness.session, "a"))
        harness.run_async(handle.handle_input(harness.session, "b"))
        assert handle._turns is None
    finally:
        harness.close()
