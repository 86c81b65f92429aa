"""crab-render-rich: a renderer for people at a terminal, and the live input of ``crab chat``.

Thin hooks only: rich and prompt_toolkit are imported by the implementation modules, when a
renderer or a chat input is built, never when ``crab --help`` loads the plugin.
"""

from __future__ import annotations

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


async def toggle_thinking(ctx: crab.CommandContext, args: str) -> crab.CommandResult:
    """``/thinking [on|off]``: show the model's reasoning, or fold it to one line."""
    from crab_render_rich.renderer import PREFERENCES

    wanted = args.strip().lower()
    if wanted in ("on", "show"):
        PREFERENCES.show_thinking = True
    elif wanted in ("off", "hide"):
        PREFERENCES.show_thinking = False
    elif not wanted:
        PREFERENCES.show_thinking = not PREFERENCES.show_thinking
    else:
        return crab.CommandResult("/thinking takes on, off or nothing (to toggle)", is_error=True)
    return crab.CommandResult("thinking is shown" if PREFERENCES.show_thinking else "thinking is folded to one line")


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
    return [crab.Command("thinking", "show or fold the model's thinking (rich renderer)", toggle_thinking, "[on|off]")]
