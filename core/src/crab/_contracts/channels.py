"""The channel protocol: where input comes from and events go (terminal, Telegram, a scheduler)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from crab._contracts.handle import AgentHandle


@runtime_checkable
class Channel(Protocol):
    """A long-running source of input. It calls ``agent.handle_input`` on the narrow handle it is
    given (``crab.AgentHandle``) and renders the events it subscribes to.

    ``local`` channels run on the user's own machine; only they may run ``!shell`` commands.

    Optional methods ``crab serve`` uses when a channel has them (``crab._assembly.channel_host``):

    - ``async deliver(address, text)``: send ``text`` to ``address`` (a chat id) it owns; other
      plugins reach it through ``AgentHandle.deliver(channel, address, text)``.
    - ``async ask(address, request) -> "once" | "always" | "deny"``: ask the person at ``address``
      to allow a tool call (``crab.PermissionRequest``); without it the gate refuses such calls
      in that channel's sessions (``AgentHandle.session_for``).
    - ``async ask_question(address, question) -> str | None``: ask the person at ``address`` a
      tool's ``crab.Question`` (show its choices; take only what they send after it was shown) and
      give their answer, or None for none; without it such questions in that channel's sessions
      are answered "nobody can answer" at once.
    - ``async stop()``: take no more input and return from ``run`` once the work in hand is
      done (SIGTERM); a channel without it is cancelled once no turn is running.
    - ``check()``: raise ``crab.ConfigError`` when the channel cannot start (a missing token);
      ``crab serve`` calls it before starting anything and exits 2 with its line.
    """

    name: str
    local: bool

    async def run(self, agent: AgentHandle) -> None:
        """Serve until cancelled or the channel closes."""
        ...
