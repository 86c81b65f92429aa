"""The renderer protocol: objects that show loop events to a person or a program (the loop never
prints); a terminal renderer may offer ``crab chat`` a live line editor (``ChatInput``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol, TextIO

from crab._contracts.events import Event
from crab._contracts.interception import Answer, PermissionRequest


class Renderer(Protocol):
    def handle(self, event: Event) -> None:
        """Show one event. Must not raise for events it does not know; ignore them instead."""
        ...

    def close(self) -> None:
        """Flush what is pending (a final newline, a summary)."""
        ...


@dataclass(frozen=True, slots=True)
class RenderTarget:
    """Where a renderer writes: ``out`` for the answer, ``err`` for progress; ``color`` for ANSI.

    ``model`` and ``context_window`` name what the run talks to, for a status line (empty / None
    when unknown).
    """

    out: TextIO
    err: TextIO
    color: bool = False
    verbose: bool = False
    model: str = ""
    context_window: int | None = None


ChatEntryKind = Literal["send", "follow_up", "interrupt", "exit"]


@dataclass(frozen=True, slots=True)
class ChatEntry:
    """What the user did at a ``ChatInput``: ``send`` a line (during a turn: steer it),
    queue a ``follow_up`` for after the turn, ``interrupt`` (Ctrl-C at an empty line) or ``exit``."""

    kind: ChatEntryKind
    text: str = ""


@dataclass(slots=True)
class ChatState:
    """What ``crab chat`` tells its input, kept current while the input is live.

    ``busy`` while a turn runs; ``steering`` and ``follow_ups`` are the typed inputs the loop has
    not taken yet; ``commands`` the router commands (for completion) and ``descriptions`` their
    one-line descriptions by name (the completion menu shows them); ``models`` the
    ``provider/model`` choices ``/model`` takes (completion); ``workspace`` the folder ``@file``
    completes in; ``history`` the file that keeps typed lines across runs; ``complete(word)`` the
    ``(text, description)`` pairs plugins offer for the word being typed (the ``crab_completions``
    hook, masked and capped; [] where nobody offers any: it never raises) (API 1.7).

    A ``ChatInput`` may also offer ``clear()``: ``/clear`` then asks it to clear the terminal it
    draws on (without one, chat writes the escape sequence itself).
    """

    workspace: Path
    history: Path
    commands: tuple[str, ...] = ()
    descriptions: Mapping[str, str] = field(default_factory=dict)
    models: tuple[str, ...] = ()
    busy: bool = False
    steering: tuple[str, ...] = ()
    follow_ups: tuple[str, ...] = ()
    hint: str = ""
    complete: Callable[[str], list[tuple[str, str]]] = field(default=lambda _word: [], compare=False, repr=False)


class ChatInput(Protocol):
    """A line editor for ``crab chat`` that stays live during a turn (``RendererSpec.chat_input``).

    Optional: ``async ask_question(question) -> str | None`` asks a tool's ``crab.Question`` there
    (guarded as the permission question is; ``Question.answer_for`` reads what was typed); a live
    input without it gives every tool question no answer (the tool tells the model so).
    """

    async def read(self) -> ChatEntry:
        """The user's next entry; may be called while a turn runs (type while it works)."""
        ...

    async def ask(self, request: PermissionRequest) -> Answer:
        """The permission gate's question, answered by keyboard: once, always (this kind), or deny."""
        ...

    def refresh(self) -> None:
        """``ChatState`` changed: redraw what shows it. Safe to call from the event loop at any time."""
        ...

    def close(self) -> None:
        """Leave the terminal as it was (and save history)."""
        ...


@dataclass(frozen=True, slots=True)
class RendererSpec:
    """A renderer a plugin offers: ``create(target)`` builds one for a run.

    ``interactive`` marks a renderer made for a person at a terminal: installed, it becomes the
    default of ``crab chat`` only (``crab run`` keeps ``plain`` unless asked). ``chat_input``, when
    given, builds the live line editor ``crab chat`` uses on a terminal with this renderer.
    """

    name: str
    description: str
    create: Callable[[RenderTarget], Renderer]
    override: bool = False
    plugin: str = ""
    interactive: bool = False
    chat_input: Callable[[Renderer, ChatState], ChatInput] | None = field(default=None, compare=False)
