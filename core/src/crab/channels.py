"""The channel protocol: where input comes from and events go (terminal, Telegram, a scheduler)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from crab.loop.agent import Agent


@runtime_checkable
class Channel(Protocol):
    """A long-running source of input. It calls ``agent.handle_input`` and renders events.

    ``local`` channels run on the user's own machine; only they may run ``!shell`` commands.
    """

    name: str
    local: bool

    async def run(self, agent: Agent) -> None:
        """Serve until cancelled or the channel closes."""
        ...
