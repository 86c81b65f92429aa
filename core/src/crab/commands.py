"""Router commands: what ``/name args`` runs. Plugins register them through ``crab_commands``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crab.loop.agent import Agent
    from crab.loop.session import Session


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command answers; ``quit`` asks the channel to end the conversation, and
    ``switch_session`` asks it to continue in another session (after ``/fork``)."""

    text: str = ""
    is_error: bool = False
    quit: bool = False
    switch_session: str | None = None


@dataclass(frozen=True, slots=True)
class CommandContext:
    """Where a command runs: the agent, the session, and whether the channel is local."""

    agent: Agent
    session: Session
    local: bool = True


CommandHandler = Callable[[CommandContext, str], "Awaitable[CommandResult | str | None] | CommandResult | str | None"]


@dataclass(frozen=True, slots=True)
class Command:
    """A router command. ``handler(ctx, args)`` gets the text after the name.

    ``local_only`` commands are refused on remote channels (Telegram…). ``override`` declares
    that this command replaces another plugin's of the same name on purpose.
    """

    name: str
    description: str
    handler: CommandHandler
    usage: str = ""
    local_only: bool = False
    override: bool = False
    plugin: str = ""
