"""The Telegram channel: long polling, one crab session and one turn at a time per chat (or
forum topic), replies as formatted messages threaded to the user's, permission questions as
inline buttons, a tool's questions as buttons or the user's next message (``crab_telegram.questions``),
the model's plan as one message edited in place (``crab_telegram.plan``).

Flow: ``run`` asks ``getMe`` and deletes a webhook left set, then polls ``getUpdates`` and
records each update in ``UpdateState`` before it is confirmed to Telegram. Each update is
handled on its own: one that fails is skipped with one warning, and the offset moves on.
Messages from allowed senders that are meant for this bot go to their chat's queue (a
``ChatWorker`` task answers them one by one); an edit of a message still queued replaces it
(or withdraws it, when the edit no longer addresses the bot), an edit of one already answered is
a new message, and an edit without text (a live location's) is no message at all; strangers
are logged and dropped; button presses answer the question waiting for them. ``stop`` ends
polling and lets each chat finish the message in hand; what is still queued stays pending and
is answered first at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import crab
from crab.secrets import lookup_key

from crab_telegram.access import allowed, bad_entries, describe_sender
from crab_telegram.incoming import command_text, parse_address
from crab_telegram.settings import AUTH_NAME, TelegramSettings

if TYPE_CHECKING:
    from telegram import CallbackQuery, Message, Update, User

    from crab_telegram.api import BotApi
    from crab_telegram.images import Fetched
    from crab_telegram.incoming import Attachment, Incoming
    from crab_telegram.questions import OpenQuestion
    from crab_telegram.state import UpdateState

NAME = "telegram"
TYPING_EVERY = 4.0
"""Seconds between ``sendChatAction`` calls (Telegram shows one for about five)."""
MAX_POLL_BACKOFF = 60.0
ALLOWED_UPDATES = ["message", "edited_message", "callback_query"]
QUESTION_SEND_WAIT = 30.0
"""At most this long a poll's updates wait for a question crab is sending to be open."""
ANSWER_WORDS = {"once": "allowed once", "always": "allowed for this chat", "deny": "denied"}
INTERRUPTED = (
    "crab was stopped while answering this message, and it is already in the conversation: "
    "send it again if you still want an answer."
)


def missing_token_line(settings: TelegramSettings) -> str:
    auth_file = crab.config.crab_home() / "auth.json"
    return (
        f"telegram: no bot token: set {settings.token_env} "
        f'(or store it under "{AUTH_NAME}" in {auth_file}); get one from @BotFather'
    )


@dataclass(eq=False)
class Job:
    """One message waiting in its chat's queue (``message`` is replaced by an edit)."""

    update_id: int
    message: Message


@dataclass(eq=False)
class ChatWorker:
    """One chat's queue and the task answering it, one message at a time."""

    address: str
    queue: deque[Job] = field(default_factory=deque)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    busy: bool = False
    asker: int | None = None
    """The user whose message is being answered (who may answer its permission questions)."""


@dataclass(frozen=True, slots=True)
class Ask:
    future: asyncio.Future[str]
    address: str
    asker: int | None


class TelegramChannel:
    """``crab serve telegram``: see the module docstring."""

    local = False

    def __init__(self, config: crab.Config) -> None:
        self.name = NAME
        self.config = config
        self.settings = TelegramSettings.from_table(config.plugin_settings(NAME))
        self.local = self.settings.allow_shell  # only then may `!command` run (all channels must agree)
        self.api: BotApi | None = None
        self.state: UpdateState | None = None
        self.me: User | None = None
        self.stopping = False
        self.chats: dict[str, ChatWorker] = {}
        self.asks: dict[str, Ask] = {}
        self.questions: dict[str, OpenQuestion] = {}
        self._showing: dict[str, asyncio.Event] = {}
        """Questions being sent: set once each is open (``_questions_shown``)."""
        self._poll: asyncio.Task[Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._stopped = asyncio.Event()
        self.redactor = crab.secrets.Redactor([])
        self.ask: Any = self._ask if self.settings.permission_prompts == "buttons" else None

    # --- setup ---------------------------------------------------------------------------------

    def token(self) -> str | None:
        return lookup_key(AUTH_NAME, self.settings.token_env)

    def check(self) -> None:
        """No token, or an ``allow_from`` entry that is not an id: a ``ConfigError`` line."""
        if not self.token():
            raise crab.ConfigError(missing_token_line(self.settings))
        bad = bad_entries(self.settings.allow_from)
        if bad:
            raise crab.ConfigError(
                f"telegram: allow_from holds {bad[0]!r}, which is not a numeric user or chat id "
                '(write ids as strings, e.g. allow_from = ["123456789"], or "*" for anyone)'
            )

    def _api(self, token: str) -> BotApi:
        from crab_telegram.api import BotApi

        self.redactor = crab.secrets.Redactor([token, *crab.secrets.known_secrets(self.config)])
        return BotApi(token, self.settings.base_url, timeout=self.settings.request_timeout, redact=self.redactor)

    def _refused(self, exc: Exception) -> crab.ConfigError:
        return crab.ConfigError(f"telegram: the Bot API refused the bot token ({exc}); check {self.settings.token_env}")

    # --- running --------------------------------------------------------------------------------

    async def run(self, agent: crab.AgentHandle) -> None:
        from crab_telegram.api import TelegramError
        from crab_telegram.state import UpdateState, state_path

        self.check()
        token = self.token() or ""
        self.stopping = False
        self._stopped = asyncio.Event()
        self.api = api = self._api(token)
        self.state = state = UpdateState(state_path(token.split(":", 1)[0]))
        if not self.settings.allow_from:
            agent.notice(
                "telegram: allow_from is empty, so nobody can use this bot: add your numeric user id to "
                "[plugins.telegram] allow_from in your user config, or run `crab telegram pair`",
                "warning",
            )
        try:
            self.me = await self._start(agent, api)
            if self.me is None:
                return  # stopped before Telegram could be reached
            await self._register_commands(agent)
            for update_id in sorted(state.pending):  # taken before a restart, never answered
                self._take(agent, update_id, state.pending[update_id])
            backoff = 1.0
            while not self.stopping:
                self._poll = asyncio.create_task(
                    api.get_updates(state.poll_offset(), self.settings.poll_timeout, ALLOWED_UPDATES)
                )
                try:
                    updates, skipped = await self._poll
                except asyncio.CancelledError:
                    if self.stopping and not _cancelling():
                        break
                    raise
                except TelegramError as exc:
                    if exc.token_refused:
                        raise self._refused(exc) from None
                    hint = (
                        " (another process polls this bot, or a webhook is set: stop the other one)"
                        if exc.code == 409
                        else ""
                    )
                    agent.notice(f"telegram: {exc}{hint}; polling again in {backoff:g}s", "warning")
                    await self._sleep(backoff)
                    backoff = min(backoff * 2, MAX_POLL_BACKOFF)
                    continue
                finally:
                    self._poll = None
                backoff = 1.0
                for skip in skipped:
                    agent.notice(
                        f"telegram: skipped update {skip.update_id}: crab cannot read it ({skip.reason})", "warning"
                    )
                taken: dict[int, tuple[Update, dict[str, Any]]] = {}
                for update in updates:
                    try:
                        taken[update.update_id] = (update, self._journaled(update))
                    except Exception as exc:
                        self._skip(agent, update.update_id, exc)
                last = max([u.update_id for u in updates] + [s.update_id for s in skipped], default=None)
                await self._questions_shown()  # an answer in this batch finds its question open
                for entry in state.take([journaled for _, journaled in taken.values()], through=last):
                    self._handle(agent, taken[int(entry["update_id"])][0])
            await self._finish()
        finally:
            for worker in self.chats.values():
                if worker.task is not None:
                    worker.task.cancel()
            for task in list(self._tasks):
                task.cancel()
            pending = [w.task for w in self.chats.values() if w.task is not None] + list(self._tasks)
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)
            self.chats.clear()
            for ask in self.asks.values():
                if not ask.future.done():
                    ask.future.set_result("deny")
            for waiting in self.questions.values():
                if not waiting.future.done():
                    waiting.future.set_result(None)
            await api.close()

    async def _start(self, agent: crab.AgentHandle, api: BotApi) -> User | None:
        """``getMe`` and ``deleteWebhook``, tried until Telegram answers (backing off as polling
        does) or ``stop``; a refused token ends the channel with a ``ConfigError`` line."""
        from crab_telegram.api import TelegramError

        backoff = 1.0
        while not self.stopping:
            try:
                return await api.start(retries=0)
            except TelegramError as exc:
                if exc.token_refused:
                    raise self._refused(exc) from None
                agent.notice(f"telegram: {exc}; trying again in {backoff:g}s", "warning")
                await self._sleep(backoff)
                backoff = min(backoff * 2, MAX_POLL_BACKOFF)
        return None

    async def stop(self) -> None:
        """Take no more messages; each chat finishes the one in hand (``crab serve`` drain)."""
        self.stopping = True
        self._stopped.set()
        if self._poll is not None:
            self._poll.cancel()

    async def _sleep(self, seconds: float) -> None:
        """Wait ``seconds``, or less when ``stop`` comes."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopped.wait(), seconds)

    async def _finish(self) -> None:
        """After ``stop``: wait for the messages in hand; idle chats end now."""
        for worker in self.chats.values():
            if worker.task is not None and not worker.busy:
                worker.task.cancel()
        running = [w.task for w in self.chats.values() if w.task is not None]
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    async def _register_commands(self, agent: crab.AgentHandle) -> None:
        """Offer crab's router commands in Telegram's command menu (best effort)."""
        from crab_telegram.api import TelegramError

        assert self.api is not None
        commands = [
            (name.lower(), (command.description or name)[:256])
            for name, command in sorted(agent.commands.items())
            if not command.local_only and name.isascii() and name.replace("_", "").isalnum() and len(name) <= 32
        ]
        with contextlib.suppress(TelegramError):
            await self.api.set_my_commands(commands)

    # --- updates --------------------------------------------------------------------------------

    def _journaled(self, update: Update) -> dict[str, Any]:
        """What the journal keeps of ``update``: its JSON, checked to be writable."""
        import json

        data: dict[str, Any] = update.to_dict()
        json.dumps(data, ensure_ascii=False).encode("utf-8")
        return data

    def _take(self, agent: crab.AgentHandle, update_id: int, raw: dict[str, Any]) -> None:
        """A pending update from the journal, parsed again and handled."""
        from telegram import Update

        assert self.state is not None
        assert self.api is not None
        try:
            update = Update.de_json({k: v for k, v in raw.items() if k != "started"}, self.api.bot)
        except Exception as exc:
            self._skip(agent, update_id, exc)
            return
        self._handle(agent, update)

    def _skip(self, agent: crab.AgentHandle, update_id: int, exc: BaseException) -> None:
        assert self.state is not None
        agent.notice(
            f"telegram: skipped update {update_id}: crab cannot handle it ({type(exc).__name__}: "
            f"{self.redactor.text(str(exc))[:200]})",
            "warning",
        )
        self.state.done(update_id)

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _handle(self, agent: crab.AgentHandle, update: Update) -> None:
        """One update, isolated: whatever goes wrong in it is one warning, never the others' end."""
        assert self.state is not None
        try:
            if update.callback_query is not None:
                self._spawn(self._button(agent, update.callback_query, update.update_id))
            elif update.message is not None:
                self._message(agent, update.update_id, update.message, edited=False)
            elif update.edited_message is not None:
                self._message(agent, update.update_id, update.edited_message, edited=True)
            else:
                self.state.done(update.update_id)
        except Exception as exc:
            self._skip(agent, update.update_id, exc)

    def _message(self, agent: crab.AgentHandle, update_id: int, message: Message, *, edited: bool) -> None:
        from crab_telegram.incoming import read_message

        assert self.state is not None
        assert self.me is not None
        sender = message.from_user.id if message.from_user is not None else None
        if not allowed(self.settings.allow_from, sender, message.chat.id):
            who = describe_sender(sender, message.from_user.username if message.from_user else None, message.chat.id)
            agent.notice(f"telegram: ignored a message from {who}: not in allow_from", "warning")
            self.state.done(update_id)
            return
        incoming = read_message(message, self.me, self.settings.group_mode)
        worker = self.chats.get(incoming.address)
        queued = None
        if edited and worker is not None:
            queued = next((j for j in worker.queue if j.message.message_id == message.message_id), None)
        if edited and (not incoming.for_us or not incoming.prompt.strip()):
            # An edit that no longer addresses crab takes its message back; one without text (a
            # live location moves every few seconds) asks nothing, before or after the answer.
            if worker is not None and queued is not None:
                worker.queue.remove(queued)
                self.state.done(queued.update_id)
            self.state.done(update_id)
            return
        if not incoming.for_us:
            self.state.done(update_id)  # another bot's command, or group talk not addressed to crab
            return
        if not edited and self._answers_question(incoming, message):
            self.state.done(update_id)
            return
        if worker is None:
            worker = self.chats[incoming.address] = ChatWorker(incoming.address)
            worker.task = asyncio.create_task(self._work(agent, worker), name=f"crab-telegram-{incoming.address}")
        if queued is not None:  # corrected before its turn began: the correction is what is asked
            queued.message = message
            self.state.replace(queued.update_id, {"message": message.to_dict()})
            self.state.done(update_id)
            return
        worker.queue.append(Job(update_id, message))
        worker.wake.set()

    async def _work(self, agent: crab.AgentHandle, worker: ChatWorker) -> None:
        assert self.state is not None
        while not self.stopping:
            if not worker.queue:
                worker.wake.clear()
                await worker.wake.wait()
                continue
            job = worker.queue.popleft()
            worker.busy = True
            try:
                await self._answer(agent, worker, job)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                agent.notice(
                    f"telegram: answering chat {worker.address} failed: {type(exc).__name__}: "
                    f"{self.redactor.text(str(exc))}",
                    "warning",
                )
            finally:
                worker.busy = False
                worker.asker = None
            self.state.done(job.update_id)
        # stopping: queued messages stay pending, answered first at the next start

    async def _button(self, agent: crab.AgentHandle, query: CallbackQuery, update_id: int) -> None:
        from crab_telegram.api import TelegramError

        assert self.api is not None
        assert self.state is not None
        try:
            sender = query.from_user.id
            chat = query.message.chat.id if query.message is not None else None
            if not allowed(self.settings.allow_from, sender, chat):
                agent.notice(f"telegram: ignored a button press from user {sender}: not in allow_from", "warning")
                return
            _, nonce, answer = (str(query.data or "") + "::").split(":")[:3]
            waiting = self.asks.get(nonce)
            note = "this question is no longer open"
            if nonce in self.questions:
                note = self._question_pressed(self.questions[nonce], answer, sender, chat)
            elif waiting is not None and answer in ANSWER_WORDS and waiting.address.split(":")[0] == str(chat):
                only_asker = self.settings.permission_answer == "asker" and waiting.asker is not None
                if only_asker and sender != waiting.asker:
                    note = "only the person who asked crab can answer this"
                else:
                    if not waiting.future.done():
                        waiting.future.set_result(answer)
                    note = ANSWER_WORDS[answer]
            with contextlib.suppress(TelegramError):
                await self.api.answer_callback_query(query.id, note)
        finally:
            self.state.done(update_id)

    # --- answering -------------------------------------------------------------------------------

    async def _answer(self, agent: crab.AgentHandle, worker: ChatWorker, job: Job) -> None:
        from crab_telegram.incoming import read_message
        from crab_telegram.plan import PlanView

        assert self.me is not None
        assert self.state is not None
        incoming = read_message(job.message, self.me, self.settings.group_mode)
        address = worker.address
        worker.asker = incoming.sender_id
        reply_to = incoming.message_id  # the answer's first message quotes the user's
        if not incoming.prompt.strip():
            await self.send_plain(
                address, "crab reads text, and the captions of photos and documents.", reply_to=reply_to
            )
            return
        fetched = await self._images(incoming.attachments)
        prompt = "\n".join([t for t in [incoming.text] if t] + fetched.notes)
        # A pasted secret (the bot token, an API key) goes no further: not to the model, not to the store.
        text = self.redactor.text(command_text(prompt)) or ""
        if text == "/start" or text.startswith("/start "):
            await self.send_plain(
                address, "crab is listening. Send a message, or /help for the commands.", reply_to=reply_to
            )
            return
        if text.startswith("!") and not self.settings.allow_shell:
            await self.send_plain(
                address,
                "!shell input is refused from Telegram (allow it with [plugins.telegram] allow_shell = true "
                "in the user config).",
                reply_to=reply_to,
            )
            return
        session = await agent.session_for(NAME, address)
        if await self._already_recorded(session, address, job.update_id, reply_to):
            return
        self.state.start(job.update_id, session.id, len(session.messages), text)
        await self._typing_once(address)
        stream = Stream(self, address, self.settings, reply_to) if self.settings.stream else None
        unsubscribe = agent.subscribe(stream.on_event, session=session) if stream is not None else None
        # Each message the user sends gets its own plan message: the last one may be far above.
        plan = PlanView(self, address, self.settings.edit_interval)
        unsubscribe_plan = agent.subscribe(plan.on_event, session=session)
        typing = asyncio.create_task(self._typing(address))
        streamer = asyncio.create_task(stream.run()) if stream is not None else None
        planner = asyncio.create_task(plan.run())
        refused: str | None = None
        try:
            outcome = await agent.handle_input(session, text, images=fetched.images)
        except crab.messages.ImageTooLarge as exc:  # refused before anything was recorded: say why
            refused = str(exc)
        finally:
            typing.cancel()
            unsubscribe_plan()
            if unsubscribe is not None:
                unsubscribe()
            if stream is not None and streamer is not None:
                await stream.close(streamer)
            await plan.close(planner)
        if refused is not None:
            await self.send_plain(address, f"⚠ {refused}", reply_to=reply_to)
            return
        if outcome.switch_session:
            await agent.session_for(NAME, address, session_id=outcome.switch_session)
        replace = stream.message_id if stream else None
        how: dict[str, Any] = {"replace": replace, "reply_to": None if replace is not None else reply_to}
        if outcome.stop == "command":
            await self.send_plain(address, outcome.text or "(done)", **how)
        elif outcome.error and not outcome.text:
            await self.send_plain(address, f"⚠ {outcome.error}", **how)
        elif outcome.stop == "aborted" and not outcome.text:
            await self.send_plain(address, "(stopped)", **how)
        else:
            await self.send_markdown(address, outcome.text or "(no answer)", **how)

    async def _images(self, attachments: tuple[Attachment, ...]) -> Fetched:
        """The message's photos and image documents, fetched (``crab_telegram.images``)."""
        from crab_telegram.images import Fetched, fetch_images

        if not attachments:
            return Fetched()
        assert self.api is not None
        return await fetch_images(self.api, attachments)

    async def _already_recorded(
        self, session: crab.SessionView, address: str, update_id: int, reply_to: int | None
    ) -> bool:
        """After a crash mid-turn: whether this message's turn had begun and recorded it in
        ``session``. Then it is not recorded or run again: the answer the turn finished is sent,
        or the chat is told the turn was cut off."""
        assert self.state is not None
        started = self.state.started(update_id)
        if started is None or started[0] != session.id:
            return False
        _, at, text = started
        messages = list(session.messages)
        if len(messages) <= at or messages[at].role != "user" or getattr(messages[at], "content", None) != text:
            return False  # the crash came before the turn recorded the message: run it now
        answer = next(
            (
                m.content
                for m in reversed(messages[at + 1 :])
                if m.role == "assistant" and m.content.strip() and m.stop_reason == "end" and not m.tool_calls
            ),
            None,
        )
        if answer is not None and messages[-1].role == "assistant":
            await self.send_markdown(address, answer, reply_to=reply_to)
        else:
            await self.send_plain(address, INTERRUPTED, reply_to=reply_to)
        return True

    async def _typing(self, address: str) -> None:
        """Show "typing…" until cancelled (renewed every ``TYPING_EVERY`` seconds)."""
        while True:
            await asyncio.sleep(TYPING_EVERY)
            await self._typing_once(address)

    async def _typing_once(self, address: str) -> None:
        from crab_telegram.api import TelegramError

        assert self.api is not None
        chat_id, thread = parse_address(address)
        with contextlib.suppress(TelegramError):
            await self.api.send_chat_action(chat_id, thread)

    # --- sending ---------------------------------------------------------------------------------

    async def send_markdown(
        self, address: str, markdown: str, *, replace: int | None = None, reply_to: int | None = None
    ) -> None:
        """``markdown`` as HTML messages (split under the limit); a piece Telegram cannot parse
        goes again as plain text. ``replace`` is a streamed message the first piece edits;
        ``reply_to`` a message the first piece replies to."""
        from crab_telegram.api import TelegramError
        from crab_telegram.format import split_message

        for piece in split_message(markdown):
            try:
                await self._put(address, piece.html, "HTML", replace, reply_to)
            except TelegramError as exc:
                if not exc.parse_error:
                    raise
                await self._put(address, piece.plain, None, replace, reply_to)
            replace = reply_to = None

    async def send_plain(
        self, address: str, text: str, *, replace: int | None = None, reply_to: int | None = None
    ) -> None:
        from crab_telegram.format import plain_pieces

        for piece in plain_pieces(text):
            await self._put(address, piece, None, replace, reply_to)
            replace = reply_to = None

    async def _put(
        self, address: str, text: str, parse_mode: str | None, replace: int | None, reply_to: int | None = None
    ) -> int | None:
        """Send (or, with ``replace``, edit) one message; returns its id. A new message replies to
        ``reply_to`` when given (Telegram sends it anyway if that message is gone)."""
        from telegram import ReplyParameters

        from crab_telegram.api import TelegramError

        assert self.api is not None
        chat_id, thread = parse_address(address)
        if replace is not None:
            try:
                await self.api.edit_message_text(chat_id, replace, text, parse_mode=parse_mode)
                return replace
            except TelegramError as exc:
                if exc.not_modified:
                    return replace
                if exc.parse_error:
                    raise
                # the streamed message is gone or too old to edit: send the answer as a new one
        return await self.api.send_message(
            chat_id,
            text,
            message_thread_id=thread,
            parse_mode=parse_mode,
            reply_parameters=(
                ReplyParameters(reply_to, allow_sending_without_reply=True) if reply_to is not None else None
            ),
        )

    async def deliver(self, address: str, text: str) -> None:
        """``crab.AgentHandle.deliver("telegram", address, text)``: a message from another plugin
        (a reminder) to a chat; only to chats ``allow_from`` admits."""
        if self.api is None or self.stopping or self.me is None:
            raise crab.ChannelError("telegram is not connected")
        try:
            chat_id, _ = parse_address(address)
        except ValueError:
            raise crab.ChannelError(f"telegram: {address!r} is not a chat id") from None
        if not allowed(self.settings.allow_from, None, chat_id):
            raise crab.ChannelError(f"telegram: chat {chat_id} is not in allow_from")
        await self.send_markdown(address, text)

    # --- permission questions -----------------------------------------------------------------

    async def _ask(self, address: str, request: crab.PermissionRequest) -> Literal["once", "always", "deny"]:
        """Ask the chat with inline buttons; no press within ``ask_timeout`` is a refusal. In a
        group, only the user whose message asked may answer (``permission_answer``)."""
        from telegram import InlineKeyboardButton, InlineKeyboardMarkup

        from crab_telegram.api import TelegramError

        assert self.api is not None
        chat_id, thread = parse_address(address)
        nonce = secrets.token_hex(8)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        worker = self.chats.get(address)
        self.asks[nonce] = Ask(future, address, worker.asker if worker is not None else None)
        question = f"crab wants to use {request.tool} ({request.permission}):\n{request.summary}\n\nAllow it?"
        buttons = InlineKeyboardMarkup(
            [
                [
                    InlineKeyboardButton("Allow once", callback_data=f"crab:{nonce}:once"),
                    InlineKeyboardButton("Always in this chat", callback_data=f"crab:{nonce}:always"),
                    InlineKeyboardButton("Deny", callback_data=f"crab:{nonce}:deny"),
                ]
            ]
        )
        try:
            message_id = await self.api.send_message(chat_id, question, message_thread_id=thread, reply_markup=buttons)
            try:
                answer = await asyncio.wait_for(future, self.settings.ask_timeout)
            except TimeoutError:
                answer = "deny"
            if message_id is not None:
                with contextlib.suppress(TelegramError):
                    await self.api.edit_message_text(
                        chat_id, message_id, f"{question}\n→ {ANSWER_WORDS.get(answer, 'denied')}"
                    )
        except TelegramError:
            answer = "deny"
        finally:
            self.asks.pop(nonce, None)
        return "once" if answer == "once" else "always" if answer == "always" else "deny"

    # --- a tool's questions (crab_telegram.questions) ------------------------------------------

    async def ask_question(self, address: str, question: crab.Question) -> str | None:
        """Ask the chat a tool's question: buttons for its choices, the next message for words;
        None when nobody answered within ``ask_timeout`` (or Telegram refused the message)."""
        from crab_telegram.api import TelegramError
        from crab_telegram.questions import OpenQuestion, question_buttons, question_text, settle

        assert self.api is not None
        chat_id, thread = parse_address(address)
        nonce = secrets.token_hex(8)
        future: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        worker = self.chats.get(address)
        text = question_text(question)
        answer: str | None = None
        showing = self._showing[nonce] = asyncio.Event()
        try:
            message_id, dated = await self.api.send_message_dated(
                chat_id, text, message_thread_id=thread, reply_markup=question_buttons(question, nonce)
            )
            # Shown now: only what the user does from here on may answer it. "From here on" by
            # Telegram's clock, which dates the user's messages, not by this host's (it may lag).
            shown_at = dated if dated is not None else time.time()
            waiting = OpenQuestion(
                question, future, address, worker.asker if worker is not None else None, shown_at, message_id
            )
            self.questions[nonce] = waiting
            showing.set()
            try:
                answer = await asyncio.wait_for(future, self.settings.ask_timeout)
            except TimeoutError:
                settle(waiting, None)
            if message_id is not None:
                with contextlib.suppress(TelegramError):
                    await self.api.edit_message_text(
                        chat_id, message_id, f"{text}\n→ {answer if answer is not None else 'no answer'}"
                    )
        except TelegramError:
            answer = None
        finally:
            showing.set()
            self._showing.pop(nonce, None)
            self.questions.pop(nonce, None)
        return answer

    async def _questions_shown(self) -> None:
        """Wait (a bounded while) for the questions being sent to be open: the user's answer can
        come back in a poll before crab has read Telegram's reply to the question's send."""
        if self._showing:
            waits = [asyncio.ensure_future(shown.wait()) for shown in list(self._showing.values())]
            _, pending = await asyncio.wait(waits, timeout=QUESTION_SEND_WAIT)
            for wait in pending:
                wait.cancel()

    def _may_answer(self, waiting: OpenQuestion, sender: int | None) -> bool:
        only_asker = self.settings.permission_answer == "asker" and waiting.asker is not None
        return not only_asker or sender == waiting.asker

    def _question_pressed(self, waiting: OpenQuestion, data: str, sender: int, chat: int | None) -> str:
        """A button of a tool's question: the note the presser sees."""
        from crab_telegram.questions import pressed, settle

        choice = pressed(waiting, data)
        if choice is None or waiting.address.split(":")[0] != str(chat):
            return "this question is no longer open"
        if not self._may_answer(waiting, sender):
            return "only the person who asked crab can answer this"
        settle(waiting, choice)
        return f"answered: {choice}"[:200]

    def _answers_question(self, incoming: Incoming, message: Message) -> bool:
        """Whether ``message`` answers the question open in its chat (and was taken as the answer)."""
        from crab_telegram.questions import after_shown, settle

        waiting = next((q for q in self.questions.values() if q.address == incoming.address), None)
        if waiting is None or waiting.future.done() or not incoming.text.strip():
            return False
        if not self._may_answer(waiting, incoming.sender_id) or not after_shown(waiting, message):
            return False  # someone else's, or written before the question: an input of its own
        said = self.redactor.text(incoming.text) or ""
        answer = waiting.question.answer_for(said)
        if answer is None:  # words where only the buttons answer: say so, keep the question open
            self._spawn(
                self.send_plain(incoming.address, "Press one of the buttons to answer.", reply_to=incoming.message_id)
            )
            return True
        settle(waiting, answer)
        return True


class Stream:
    """A long answer shown as it is written: one message, edited at most every ``edit_interval``
    seconds (Telegram's edit limits), first sent once the turn has run that long."""

    def __init__(
        self, channel: TelegramChannel, address: str, settings: TelegramSettings, reply_to: int | None = None
    ) -> None:
        self.channel = channel
        self.address = address
        self.reply_to = reply_to
        self.interval = settings.edit_interval
        self.text = ""
        self.shown = ""
        self.message_id: int | None = None
        self.started = time.monotonic()
        self.changed = asyncio.Event()
        self.closing = False

    def on_event(self, event: crab.events.Event) -> None:
        if isinstance(event, crab.events.TextDelta):
            self.text += event.text
            self.changed.set()

    async def run(self) -> None:
        from crab_telegram.api import TelegramError
        from crab_telegram.format import LIMIT, units

        last = self.started
        while not self.closing:
            await self.changed.wait()
            self.changed.clear()
            wait = last + self.interval - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if self.closing:
                return
            preview = self.text.strip()
            if not preview or preview == self.shown or units(preview) > LIMIT - 2:
                if units(preview) > LIMIT - 2:
                    return  # too long for one message: the final answer comes split
                continue
            try:
                reply_to = self.reply_to if self.message_id is None else None
                self.message_id = await self.channel._put(self.address, preview + " …", None, self.message_id, reply_to)
            except TelegramError:
                return
            self.shown = preview
            last = time.monotonic()

    async def close(self, task: asyncio.Task[None]) -> None:
        """Stop streaming, letting an edit in flight finish (so its message id is known)."""
        self.closing = True
        self.changed.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), 30)
        except (TimeoutError, Exception):
            task.cancel()


def _cancelling() -> bool:
    """Whether the current task itself is being cancelled (not just the poll inside it)."""
    task = asyncio.current_task()
    return bool(task is not None and task.cancelling())
