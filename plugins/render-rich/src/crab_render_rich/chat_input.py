"""``PromptInput``: the live input of ``crab chat`` (a ``crab.rendering.ChatInput``), built on prompt_toolkit.

Enter sends (during a turn: steers it), Alt-Enter queues a follow-up, Ctrl-J starts a new line,
Tab completes ``/commands`` (with their descriptions), ``/model``'s models, ``@paths`` and what
plugins offer for an ``@`` word (``ChatState.complete``: crab-mcp's ``@server:uri``), Up/Down
walk the history (kept in ``ChatState.history`` across runs), Ctrl-C clears the line or, on an
empty one, interrupts; Ctrl-D on an empty line leaves; Ctrl-T shows or folds thinking; Ctrl-G (or
sending ``/edit [text]``) opens the line in ``$EDITOR`` (prompt_toolkit's own: ``$VISUAL``,
``$EDITOR``, else a common editor on ``PATH``) and puts what was saved back on the line. The
renderer's live area, the pending steers and follow-ups, and the permission gate's question or a
tool's question are drawn above the line being typed.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any, Literal

from crab import Answer, PermissionRequest, Question, Renderer
from crab.rendering import ChatEntry, ChatState

from crab_render_rich.prompt_screen import PromptScreen, terminal_size
from crab_render_rich.question import Question as PermissionQuestion
from crab_render_rich.renderer import PREFERENCES, RichRenderer
from crab_render_rich.screen import REFRESH_PER_SECOND
from crab_render_rich.user_question import UserQuestion
from crab_render_rich.view import fit, one_line

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession

PROMPT, BUSY_PROMPT = "❯ ", "↳ "
IDLE_HELP = (
    "Enter send",
    "Ctrl-J new line",
    "Tab complete /cmd @file",
    "Ctrl-G editor",
    "Ctrl-T thinking",
    "Ctrl-D leave",
)
EDIT = "/edit"
CLEAR = "\x1b[H\x1b[2J\x1b[3J"
"""Home, clear the screen, clear the scrollback: what ``/clear`` writes."""
BUSY_HELP = ("working", "Enter steers", "Alt-Enter queues a follow-up", "Ctrl-C stops the turn")
Sent = Literal["send", "follow_up"]


class PromptInput:
    """See the module docstring; ``renderer`` is this plugin's ``RichRenderer`` (it draws here)."""

    def __init__(self, renderer: Renderer, state: ChatState) -> None:
        self.state = state
        self.screen = PromptScreen()
        if isinstance(renderer, RichRenderer):
            renderer.use_screen(self.screen)
        self.question: PermissionQuestion | UserQuestion | None = None
        self._asking = asyncio.Lock()
        self._kind: Sent = "send"
        self._accepting = False
        self._session: PromptSession[str] | None = None

    # --- prompt_toolkit ------------------------------------------------------------------------

    def _prompt_session(self) -> PromptSession[str]:
        if self._session is None:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.history import FileHistory, InMemoryHistory

            from crab_render_rich.completion import make_completer

            history: Any
            try:
                self.state.history.parent.mkdir(parents=True, exist_ok=True)
                history = FileHistory(str(self.state.history))
            except OSError:
                history = InMemoryHistory()
            self._session = PromptSession(
                history=history,
                completer=make_completer(  # type: ignore[arg-type]
                    self.state.commands,
                    self.state.workspace,
                    self.state.descriptions,
                    self.state.models,
                    self.state.complete,
                ),
                complete_while_typing=False,
                key_bindings=self._keys(),
                multiline=True,
                prompt_continuation=lambda width, line, wrap: "  ",
                bottom_toolbar=self._toolbar,
                refresh_interval=0.1,
            )
            self._session.app.after_render += self._after_render
            # Redraws (which render the live area) follow the clock, not the token rate.
            self._session.app.min_redraw_interval = 1 / REFRESH_PER_SECOND
        return self._session

    def _keys(self) -> Any:
        from prompt_toolkit.filters import Condition
        from prompt_toolkit.key_binding import KeyBindings
        from prompt_toolkit.keys import Keys

        keys = KeyBindings()
        asking = Condition(lambda: self.question is not None)
        listening = Condition(lambda: self.question is not None and self.question.listening())

        def accept(event: Any, kind: Sent) -> None:
            buffer = event.current_buffer
            state = buffer.complete_state
            if kind == "send" and state and state.current_completion:
                buffer.apply_completion(state.current_completion)
                if len(state.completions) > 1:
                    return  # Enter picks from a menu; the only match (`/model script-b`) is as good as typed
            draft = edit_draft(buffer.text)
            if draft is not None:
                open_editor(buffer, draft)
                return
            self._kind = kind
            self._accepting = True
            buffer.validate_and_handle()

        @keys.add("enter", filter=~asking)
        def _send(event: Any) -> None:
            accept(event, "send")

        @keys.add("escape", "enter", filter=~asking)
        def _follow_up(event: Any) -> None:
            accept(event, "follow_up")

        @keys.add("c-j", filter=~asking)
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @keys.add("c-c")
        def _interrupt(event: Any) -> None:
            if self.question is not None:
                self.question.settle("deny")
            elif event.current_buffer.text:
                event.current_buffer.reset()
            else:
                self._accepting = True
                event.app.exit(exception=KeyboardInterrupt())

        @keys.add("c-d", filter=~asking)
        def _leave(event: Any) -> None:
            buffer = event.current_buffer
            if buffer.text:
                buffer.delete()
            else:
                self._accepting = True
                event.app.exit(exception=EOFError())

        @keys.add("c-g", filter=~asking)
        def _editor(event: Any) -> None:
            open_editor(event.current_buffer, event.current_buffer.text)

        @keys.add("c-t")
        def _thinking(event: Any) -> None:
            PREFERENCES.show_thinking = not PREFERENCES.show_thinking
            event.app.invalidate()

        @keys.add("enter", filter=asking)
        def _answer_typed(event: Any) -> None:
            question = self.question
            if question is None or not question.listening():
                return  # Enter typed ahead: it answers nothing
            buffer = event.current_buffer
            text = buffer.text
            buffer.reset()
            question.entered(text)

        @keys.add(Keys.Any, filter=asking & ~listening)
        @keys.add(Keys.BracketedPaste, filter=asking & ~listening)
        def _set_aside(event: Any) -> None:
            if self.question is not None:
                self.question.set_aside(_typed_text(event))

        return keys

    def _message(self) -> Any:
        from prompt_toolkit.formatted_text import ANSI

        prompt = BUSY_PROMPT if self.state.busy else PROMPT
        if self._accepting:
            return ANSI(f"\x1b[1m{prompt}\x1b[0m")
        width = terminal_size()[0] - 1
        parts = [self.screen.ansi()]
        pending = (("⇢ steer (pending)", self.state.steering), ("⏎ follow-up (queued)", self.state.follow_ups))
        for label, texts in pending:
            for text in texts:
                parts.append(f"\x1b[2m  {label}: {one_line(text, max(8, width - len(label) - 4))}\x1b[0m\n")
        if self.question is not None:
            self.question.drawn()
            parts.append(self.question.ansi(width))
            prompt = self.question.prompt()
        parts.append(f"\x1b[1m{prompt}\x1b[0m")
        return ANSI("".join(parts))

    def _toolbar(self) -> str:
        """One line of help, cut between its parts to the terminal's width (never inside a word)."""
        if self.question is not None:
            parts = self.question.help()
        else:
            parts = [*([self.state.hint] if self.state.hint else []), *(BUSY_HELP if self.state.busy else IDLE_HELP)]
        return fit(parts, terminal_size()[0] - 1)

    # --- crab.rendering.ChatInput ------------------------------------------------------------------------

    async def read(self) -> ChatEntry:
        self._accepting = False
        self._kind = "send"
        session = self._prompt_session()
        try:
            text = await session.prompt_async(self._message)
        except KeyboardInterrupt:
            return ChatEntry("interrupt")
        except EOFError:
            return ChatEntry("exit")
        finally:
            self._accepting = False
        return ChatEntry(self._kind, text)

    async def ask(self, request: PermissionRequest) -> Answer:
        async with self._asking:
            future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            self.question = PermissionQuestion(request, future, self._take_draft())
            self.refresh()
            try:
                answer = await future
            finally:
                question, self.question = self.question, None
                self._give_back(question.draft)
                self.refresh()
            from crab_render_rich.view import notice

            said = {"once": "allowed once", "always": f"allowed {request.permission} for this session"}
            style = "red" if answer == "deny" else "green"
            self.screen.print(notice(f"{said.get(answer, 'denied')}: {one_line(request.summary)}", style, "  "))
            return answer

    async def ask_question(self, question: Question) -> str | None:
        """A tool's question (``crab_render_rich.user_question``), one at a time with permission questions."""
        async with self._asking:
            future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
            self.question = UserQuestion(question, future, self._take_draft())
            self.refresh()
            try:
                answer = await future
            finally:
                asked, self.question = self.question, None
                self._give_back(asked.draft)
                self.refresh()
            from crab_render_rich.view import notice

            said = f"answered: {one_line(answer)}" if answer is not None else "no answer"
            self.screen.print(notice(f"{said} · {one_line(question.text)}", "green" if answer else "red", "  "))
            return answer

    def _take_draft(self) -> str:
        """What is being typed when a question comes: set aside (the line becomes the answer line)."""
        if self._session is None:
            return ""
        buffer = self._session.default_buffer
        draft = buffer.text
        buffer.reset()
        return draft

    def _give_back(self, draft: str) -> None:
        """The question is answered: the answer line becomes the draft again (what was typed there
        and not sent with Enter was meant for the question, not for the model)."""
        if self._session is None:
            return
        from prompt_toolkit.document import Document

        self._session.default_buffer.reset(Document(draft, len(draft)))

    def _after_render(self, app: Any) -> None:
        """The question reached the terminal: from now on it is shown; flush what was typed ahead."""
        if self.question is not None and self.question.shown():
            _flush_typeahead(app)

    def refresh(self) -> None:
        self.screen.refresh()

    def clear(self) -> None:
        """``/clear``: the terminal cleared, scrollback too; the prompt is drawn again at the top."""
        self.screen.answer(CLEAR)

    def close(self) -> None:
        if self.question is not None:
            self.question.settle("deny")
        self.screen.close()


def edit_draft(text: str) -> str | None:
    """For a line that is ``/edit [text]``, the text the editor starts with; None for any other line."""
    stripped = text.strip()
    if stripped != EDIT and not stripped.startswith(EDIT + " "):
        return None
    return stripped[len(EDIT) :].strip()


def open_editor(buffer: Any, text: str) -> None:
    """Open ``$EDITOR`` on ``text`` (prompt_toolkit runs it in the terminal and puts what was saved
    back on the line, not sent: the user reads it and presses Enter)."""
    from prompt_toolkit.document import Document

    buffer.document = Document(text, len(text))
    buffer.open_in_editor()


def _typed_text(event: Any) -> str:
    """The text a key press would insert: a printable character or a paste; nothing for other keys."""
    from prompt_toolkit.keys import Keys

    key = event.key_sequence[0].key if event.key_sequence else None
    if key == Keys.BracketedPaste:
        return str(event.data)
    if isinstance(key, str) and not isinstance(key, Keys) and len(key) == 1 and key.isprintable():
        return key
    return ""


def _flush_typeahead(app: Any) -> None:
    """Drop input typed before the question was shown and not read yet (parsed keys, the tty's queue)."""
    app.key_processor.empty_queue()
    app.input.flush_keys()
    try:
        import termios
    except ImportError:  # not POSIX: prompt_toolkit's own queues were all there was
        return
    try:
        fd = app.input.fileno()
        if os.isatty(fd):
            termios.tcflush(fd, termios.TCIFLUSH)
    except (OSError, ValueError, NotImplementedError, termios.error):
        pass  # not a terminal (a pipe in a test): nothing waits in a tty queue
