"""Thinking effort, one setting for every provider: ``[crab] thinking`` (``--thinking``),
``/thinking LEVEL`` for one session (``/effort`` is its alias; a renderer that folds thinking text
may take over ``/thinking`` for its show/fold words and pass levels on), ``run(..., thinking=)``
for one library run. Each request carries the level as ``ModelRequest.options["thinking"]`` and
each provider maps it to its own control (Anthropic's thinking budget, OpenAI's
``reasoning_effort``, a local server's ``enable_thinking``); a provider that has none (no
``thinks(model)`` saying yes) is named once in a notice, and the level is dropped."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from crab._contracts.commands import Command, CommandContext, CommandResult
from crab._contracts.errors import UsageError
from crab._host.hookspecs import hookimpl

if TYPE_CHECKING:
    from crab._contracts.config import Config
    from crab._contracts.providers import ModelRequest
    from crab._loop.agent import Agent

ThinkingLevel = Literal["off", "low", "medium", "high"]
LEVELS: tuple[str, ...] = ("off", "low", "medium", "high")
PLUGIN = "crab-thinking"
"""The plugin name of an agent's ``ThinkingRoute`` (one of crab's own)."""
ALIAS = "effort"
"""The second name of the ``/thinking`` level command."""
NO_THINKING = "{provider}/{model} has no thinking control: thinking = {level} is ignored for it"


def checked_level(value: object, where: str = "thinking") -> str:
    """``value`` as a thinking level; ``UsageError`` naming the ones there are."""
    if value not in LEVELS:
        raise UsageError(f"{where} takes one of {', '.join(LEVELS)}, not {value!r}")
    return str(value)


class ThinkingRoute:
    """Puts each session's thinking level on its requests: the session's ``/thinking`` level, else
    ``[crab] thinking``; a level a library run put on the request already wins."""

    def __init__(self) -> None:
        self.default: str | None = None
        self.sessions: dict[str, str] = {}
        self.agent: Agent | None = None  # set once assembled: its provider says whether it thinks
        self._told: set[tuple[str, str]] = set()

    @hookimpl
    def crab_startup(self, agent: Any) -> None:
        configured = agent.config.get("crab.thinking")
        self.default = checked_level(configured, "[crab] thinking") if configured is not None else None

    @hookimpl
    def crab_commands(self, config: Config) -> list[Command]:
        about = "show or set how hard the model thinks (its thinking level)"
        return [
            Command("thinking", about, self._command, usage="[off|low|medium|high]"),
            # the alias stays reachable when a renderer takes over /thinking: it passes levels on here
            Command(ALIAS, f"{about}; alias of /thinking", self._command, usage="[off|low|medium|high]"),
        ]

    async def _command(self, ctx: CommandContext, args: str) -> CommandResult:
        level = args.strip()
        if not level:
            now = self.sessions.get(ctx.session.id, self.default)
            shown = now or "the provider default"
            return CommandResult(f"thinking: {shown} (set it with /thinking off|low|medium|high)")
        try:
            self.sessions[ctx.session.id] = checked_level(level, "/thinking")
        except UsageError as exc:
            return CommandResult(str(exc), is_error=True)
        return CommandResult(f"thinking: {level} from the next request on")

    @hookimpl
    def crab_before_model_call(self, request: ModelRequest, session_id: str) -> ModelRequest | None:
        level = request.options.get("thinking") or self.sessions.get(session_id, self.default)
        if level is None:
            return None
        if not self._thinks(request.model, str(level)):
            options = {k: v for k, v in request.options.items() if k != "thinking"}
            return replace(request, options=options) if "thinking" in request.options else None
        return replace(request, options={**request.options, "thinking": level})

    def _thinks(self, model: str, level: str) -> bool:
        """Whether the agent's provider maps ``level`` for ``model``; says so once when not."""
        agent = self.agent
        if agent is None:
            return True
        thinks = getattr(agent.provider, "thinks", None)
        if callable(thinks) and thinks(model):
            return True
        key = (agent.provider.name, model)
        if level != "off" and key not in self._told:
            self._told.add(key)
            agent.notice(NO_THINKING.format(provider=agent.provider.name, model=model, level=level), "warning")
        return False
