"""crab-render-rich: a renderer for people at a terminal, and the live input of ``crab chat``.

Thin hooks only: rich and prompt_toolkit are imported by the implementation modules, when a
renderer or a chat input is built, never when ``crab --help`` loads the plugin.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import crab

if TYPE_CHECKING:
    from crab import Config, Renderer
    from crab.rendering import ChatInput, ChatState, RenderTarget

CRAB_API = ">=0.1,<0.2"
NAME = "rich"


def create(target: RenderTarget) -> Renderer:
    """The rich renderer for ``target``: live Markdown on a terminal, plain text when piped."""
    from crab_render_rich.build import build_renderer

    return build_renderer(target)


def chat_input(renderer: Renderer, state: ChatState) -> ChatInput:
    """The prompt_toolkit input of ``crab chat``: multi-line, history, completion, live during turns."""
    from crab_render_rich.chat_input import PromptInput

    return PromptInput(renderer, state)


LEVELS = ("off", "low", "medium", "high")
LEVEL_COMMAND = "effort"  # crab's own thinking-level command under its second name: /thinking is ours here


async def toggle_thinking(ctx: crab.CommandContext, args: str) -> crab.CommandResult:
    """``/thinking [show|fold]``: show the model's reasoning, fold it to one line, or (no word)
    toggle; ``/thinking off|low|medium|high`` sets the thinking level through crab's command."""
    from crab_render_rich.renderer import PREFERENCES

    wanted = args.strip().lower()
    if wanted in LEVELS:
        return await _set_level(ctx, wanted)
    if wanted in ("show", "on"):
        PREFERENCES.show_thinking = True
    elif wanted in ("fold", "hide"):
        PREFERENCES.show_thinking = False
    elif not wanted:
        PREFERENCES.show_thinking = not PREFERENCES.show_thinking
    else:
        return crab.CommandResult(
            "/thinking takes show, fold or nothing (to toggle), or a level: off, low, medium or high", is_error=True
        )
    return crab.CommandResult("thinking is shown" if PREFERENCES.show_thinking else "thinking is folded to one line")


async def _set_level(ctx: crab.CommandContext, level: str) -> crab.CommandResult:
    command = ctx.handle.commands.get(LEVEL_COMMAND)
    if command is None:
        missing = f"no thinking levels here: crab's /{LEVEL_COMMAND} command is not loaded"
        return crab.CommandResult(missing, is_error=True)
    answer = command.handler(ctx, level)
    if inspect.isawaitable(answer):
        answer = await answer
    if isinstance(answer, crab.CommandResult):
        return answer
    return crab.CommandResult(answer or "")


@crab.hookimpl
def crab_renderers(config: Config) -> list[crab.rendering.RendererSpec]:
    return [
        crab.rendering.RendererSpec(
            NAME,
            "rich terminal: live Markdown, tool spinners, status line; crab chat's live input",
            create,
            interactive=True,
            chat_input=chat_input,
        )
    ]


@crab.hookimpl
def crab_commands(config: Config) -> list[crab.Command]:
    return [
        crab.Command(
            "thinking",
            "show or fold the model's thinking, or set its level",
            toggle_thinking,
            "[show|fold|off|low|medium|high]",
            override=True,  # takes crab's /thinking on purpose, and passes the levels on to it
        )
    ]
