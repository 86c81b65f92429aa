"""Router commands: what ``/name args`` runs. Plugins register them through ``crab_commands``."""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from crab._contracts.handle import AgentHandle, SessionView


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What a command answers; ``quit`` asks the channel to end the conversation,
    ``switch_session`` asks it to continue in another session (after ``/fork``, ``/new``,
    ``/resume``), and ``clear_screen`` asks a terminal channel to clear its screen (``/clear``;
    other channels ignore it)."""

    text: str = ""
    is_error: bool = False
    quit: bool = False
    switch_session: str | None = None
    clear_screen: bool = False


@dataclass(frozen=True, slots=True)
class CommandContext:
    """Where a command runs: the agent's narrow ``handle``, the session, and whether the channel is local.

    API 1.x: ``ctx.agent`` still works (deprecated, warns) and gives the same handle.
    """

    handle: AgentHandle
    session: SessionView
    local: bool = True

    @property
    def agent(self) -> Any:
        """Deprecated (ends in crab 2.0): use ``ctx.handle``."""
        warnings.warn("CommandContext.agent is deprecated; use ctx.handle", DeprecationWarning, stacklevel=2)
        return self.handle


CommandHandler = Callable[[CommandContext, str], "Awaitable[CommandResult | str | None] | CommandResult | str | None"]


@dataclass(frozen=True, slots=True)
class Command:
    """A router command. ``handler(ctx, args)`` gets the text after the name.

    ``local_only`` commands are refused on remote channels (Telegram…). ``override`` declares
    that this command replaces another plugin's of the same name on purpose. ``file`` is the file
    a person wrote the command in (a user's command file): a name clash then says to rename that
    file. ``gives_way`` loses every name clash, whatever the load order: set for a command from a
    source the user did not vouch for (an untrusted project's command file), so a cloned
    repository cannot take a name another plugin registers (1.6).
    """

    name: str
    description: str
    handler: CommandHandler
    usage: str = ""
    local_only: bool = False
    override: bool = False
    plugin: str = ""
    file: str = ""
    gives_way: bool = False
