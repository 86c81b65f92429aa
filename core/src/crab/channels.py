"""The channel protocol: where input comes from and events go (terminal, Telegram, a scheduler)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from crab.handles import AgentHandle


@runtime_checkable
class Channel(Protocol):
    """A long-running source of input. It calls ``agent.handle_input`` on the narrow handle it is
    given (``crab.AgentHandle``) and renders the events it subscribes to.

    ``local`` channels run on the user's own machine; only they may run ``!shell`` commands.
    """

    name: str
    local: bool

    async def run(self, agent: AgentHandle) -> None:
        """Serve until cancelled or the channel closes."""
        ...
