"""The Telegram channel: long polling, one crab session and one turn at a time per chat (or
forum topic), replies as formatted messages, permission questions as inline buttons.

Flow: ``run`` polls ``getUpdates`` and records each update in ``UpdateState`` before it is
confirmed to Telegram; messages from allowed senders go to their chat's queue (a ``ChatWorker``
task answers them one by one), strangers are logged and dropped; button presses answer the
question waiting for them. ``stop`` ends polling and lets each chat finish the message in hand;
what is still queued stays pending and is answered first at the next start.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import crab
from crab import lookup_key

from crab_telegram.access import allowed, bad_entries, describe_sender
from crab_telegram.settings import AUTH_NAME, TelegramSettings

if TYPE_CHECKING:
    from crab_telegram.api import BotApi
    from crab_telegram.state import UpdateState

NAME = "telegram"
TYPING_EVERY = 4.0
"""Seconds between ``sendChatAction`` calls (Telegram shows one for about five)."""
MAX_POLL_BACKOFF = 60.0
ALLOWED_UPDATES = ["message", "callback_query"]
ANSWER_WORDS = {"once": "allowed once", "always": "allowed for this chat", "deny": "denied"}


def address_of(message: Mapping[str, Any]) -> str:
    """A chat's address: its id, or ``id:topic`` for a forum topic."""
    chat_id = (message.get("chat") or {}).get("id")
    thread = message.get("message_thread_id") if message.get("is_topic_message") else None
    return f"{chat_id}:{thread}" if isinstance(thread, int) else str(chat_id)


def parse_address(address: str) -> tuple[int, int | None]:
    """``"42"`` → (42, None); ``"-100:7"`` → (-100, 7); ``ValueError`` for anything else."""
    chat, _, thread = address.partition(":")
    return int(chat), (int(thread) if thread else None)


def command_text(text: str) -> str:
    """``/cmd@MyBot args`` (a group's form) → ``/cmd args``."""
    if not text.startswith("/"):
        return text
    head, sep, rest = text.partition(" ")
    return head.split("@", 1)[0] + sep + rest


def missing_token_line(settings: TelegramSettings) -> str:
    auth_file = crab.crab_home() / "auth.json"
    return (
        f"telegram: no bot token: set {settings.token_env} "
        f'(or store it under "{AUTH_NAME}" in {auth_file}); get one from @BotFather'
    )


@dataclass(eq=False)
class ChatWorker:
    """One chat's queue and the task answering it, one message at a time."""

    address: str
    queue: asyncio.Queue[dict[str, Any]] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    busy: bool = False


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
        self.stopping = False
        self.chats: dict[str, ChatWorker] = {}
        self.asks: dict[str, tuple[asyncio.Future[str], str]] = {}
        self._poll: asyncio.Task[Any] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._handle: Any = None
        self._stopped = asyncio.Event()
        self.redactor = crab.Redactor([])
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

        self.redactor = crab.Redactor([token, *crab.known_secrets(self.config)])
        return BotApi(token, self.settings.base_url, timeout=self.settings.request_timeout, redact=self.redactor)

    # --- running --------------------------------------------------------------------------------

    async def run(self, agent: crab.AgentHandle) -> None:
        from crab_telegram.api import TelegramError
        from crab_telegram.state import UpdateState, state_path

        self.check()
        token = self.token() or ""
        self.stopping = False
        self._stopped = asyncio.Event()
        self._handle = agent
        self.api = api = self._api(token)
        self.state = state = UpdateState(state_path(token.split(":", 1)[0]))
        if not self.settings.allow_from:
            agent.notice(
                "telegram: allow_from is empty, so nobody can use this bot: add your numeric user id to "
                "[plugins.telegram] allow_from in your user config, or run `crab telegram pair`",
                "warning",
            )
        try:
            await self._register_commands(agent)
            for update_id in sorted(state.pending):  # taken before a restart, never answered
                self._dispatch(agent, state.pending[update_id])
            backoff = 1.0
            while not self.stopping:
                self._poll = asyncio.create_task(
                    api.call(
                        "getUpdates",
                        offset=state.offset or None,
                        timeout=self.settings.poll_timeout,
                        allowed_updates=ALLOWED_UPDATES,
                        http_timeout=self.settings.poll_timeout + self.settings.request_timeout,
                    )
                )
                try:
                    updates = await self._poll
                except asyncio.CancelledError:
                    if self.stopping and not _cancelling():
                        break
                    raise
                except TelegramError as exc:
                    if exc.code in (401, 404):
                        raise crab.ConfigError(
                            f"telegram: the Bot API refused the bot token ({exc}); check {self.settings.token_env}"
                        ) from None
                    agent.notice(f"telegram: {exc}; polling again in {backoff:g}s", "warning")
                    await self._sleep(backoff)
                    backoff = min(backoff * 2, MAX_POLL_BACKOFF)
                    continue
                finally:
                    self._poll = None
                backoff = 1.0
                # journaled redacted: a pasted token or key never reaches the state file
                received = [self.redactor.payload(u) for u in updates or [] if isinstance(u, dict)]
                for update in state.take(received):
                    self._dispatch(agent, update)
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
            for future, _ in self.asks.values():
                if not future.done():
                    future.set_result("deny")
            await api.close()

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
            {"command": name, "description": (command.description or name)[:256]}
            for name, command in sorted(agent.commands.items())
            if not command.local_only and name.isascii() and name.replace("_", "").isalnum() and len(name) <= 32
        ]
        with contextlib.suppress(TelegramError):
            await self.api.call("setMyCommands", commands=[{**c, "command": c["command"].lower()} for c in commands])

    # --- updates --------------------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        task = asyncio.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _dispatch(self, agent: crab.AgentHandle, update: dict[str, Any]) -> None:
        assert self.state is not None
        update_id = int(update["update_id"])
        if isinstance(update.get("callback_query"), dict):
            self._spawn(self._button(agent, update["callback_query"], update_id))
            return
        message = update.get("message")
        if not isinstance(message, dict):
            self.state.done(update_id)
            return
        sender = (message.get("from") or {}).get("id")
        chat = (message.get("chat") or {}).get("id")
        if not allowed(self.settings.allow_from, sender, chat):
            agent.notice(f"telegram: ignored a message from {describe_sender(message)}: not in allow_from", "warning")
            self.state.done(update_id)
            return
        address = address_of(message)
        worker = self.chats.get(address)
        if worker is None:
            worker = self.chats[address] = ChatWorker(address)
            worker.task = asyncio.create_task(self._work(agent, worker), name=f"crab-telegram-{address}")
        worker.queue.put_nowait(update)

    async def _work(self, agent: crab.AgentHandle, worker: ChatWorker) -> None:
        assert self.state is not None
        while not self.stopping or not worker.queue.empty():
            if self.stopping:
                return  # queued messages stay pending: answered first at the next start
            update = await worker.queue.get()
            worker.busy = True
            try:
                await self._answer(agent, worker.address, update["message"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                agent.notice(
                    f"telegram: answering chat {worker.address} failed: {type(exc).__name__}: {exc}", "warning"
                )
            finally:
                worker.busy = False
            self.state.done(int(update["update_id"]))

    async def _button(self, agent: crab.AgentHandle, query: dict[str, Any], update_id: int) -> None:
        from crab_telegram.api import TelegramError

        assert self.api is not None
        assert self.state is not None
        try:
            message = query.get("message") or {}
            sender = (query.get("from") or {}).get("id")
            chat = (message.get("chat") or {}).get("id")
            if not allowed(self.settings.allow_from, sender, chat):
                agent.notice(f"telegram: ignored a button press from user {sender}: not in allow_from", "warning")
                return
            _, nonce, answer = (str(query.get("data") or "") + "::").split(":")[:3]
            waiting = self.asks.get(nonce)
            note = "this question is no longer open"
            if waiting is not None and answer in ANSWER_WORDS and str(waiting[1]).split(":")[0] == str(chat):
                future, _ = waiting
                if not future.done():
                    future.set_result(answer)
                note = ANSWER_WORDS[answer]
            with contextlib.suppress(TelegramError):
                await self.api.call("answerCallbackQuery", callback_query_id=query.get("id"), text=note)
        finally:
            self.state.done(update_id)

    # --- answering -------------------------------------------------------------------------------

    async def _answer(self, agent: crab.AgentHandle, address: str, message: dict[str, Any]) -> None:
        text = message.get("text")
        if not isinstance(text, str) or not text.strip():
            await self.send_plain(address, "crab reads text messages only.")
            return
        # A pasted secret (the bot token, an API key) goes no further: not to the model, not to the store.
        text = self.redactor.text(command_text(text.strip()))
        if text == "/start" or text.startswith("/start "):
            await self.send_plain(address, "crab is listening. Send a message, or /help for the commands.")
            return
        if text.startswith("!") and not self.settings.allow_shell:
            await self.send_plain(
                address,
                "!shell input is refused from Telegram (allow it with [plugins.telegram] allow_shell = true "
                "in the user config).",
            )
            return
        session = await agent.session_for(NAME, address)
        await self._typing_once(address)
        stream = Stream(self, address, self.settings) if self.settings.stream else None
        unsubscribe = agent.subscribe(stream.on_event, session=session) if stream is not None else None
        typing = asyncio.create_task(self._typing(address))
        streamer = asyncio.create_task(stream.run()) if stream is not None else None
        try:
            outcome = await agent.handle_input(session, text)
        finally:
            typing.cancel()
            if unsubscribe is not None:
                unsubscribe()
            if stream is not None and streamer is not None:
                await stream.close(streamer)
        if outcome.switch_session:
            await agent.session_for(NAME, address, session_id=outcome.switch_session)
        if outcome.stop == "command":
            await self.send_plain(address, outcome.text or "(done)", replace=stream.message_id if stream else None)
        elif outcome.error and not outcome.text:
            await self.send_plain(address, f"⚠ {outcome.error}", replace=stream.message_id if stream else None)
        elif outcome.stop == "aborted" and not outcome.text:
            await self.send_plain(address, "(stopped)", replace=stream.message_id if stream else None)
        else:
            await self.send_markdown(
                address, outcome.text or "(no answer)", replace=stream.message_id if stream else None
            )

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
            await self.api.call("sendChatAction", chat_id=chat_id, message_thread_id=thread, action="typing", retries=0)

    # --- sending ---------------------------------------------------------------------------------

    async def send_markdown(self, address: str, markdown: str, *, replace: int | None = None) -> None:
        """``markdown`` as HTML messages (split under the limit); a piece Telegram cannot parse
        goes again as plain text. ``replace`` is a streamed message the first piece edits."""
        from crab_telegram.api import TelegramError
        from crab_telegram.format import split_message

        for piece in split_message(markdown):
            try:
                await self._put(address, piece.html, "HTML", replace)
            except TelegramError as exc:
                if not exc.parse_error:
                    raise
                await self._put(address, piece.plain, None, replace)
            replace = None

    async def send_plain(self, address: str, text: str, *, replace: int | None = None) -> None:
        from crab_telegram.format import plain_pieces

        for piece in plain_pieces(text):
            await self._put(address, piece, None, replace)
            replace = None

    async def _put(self, address: str, text: str, parse_mode: str | None, replace: int | None) -> int | None:
        """Send (or, with ``replace``, edit) one message; returns its id."""
        from crab_telegram.api import TelegramError

        assert self.api is not None
        chat_id, thread = parse_address(address)
        if replace is not None:
            try:
                await self.api.call(
                    "editMessageText", chat_id=chat_id, message_id=replace, text=text, parse_mode=parse_mode
                )
                return replace
            except TelegramError as exc:
                if exc.not_modified:
                    return replace
                if exc.parse_error:
                    raise
                # the streamed message is gone or too old to edit: send the answer as a new one
        result = await self.api.call(
            "sendMessage", chat_id=chat_id, message_thread_id=thread, text=text, parse_mode=parse_mode
        )
        message_id = result.get("message_id") if isinstance(result, dict) else None
        return message_id if isinstance(message_id, int) else None

    async def deliver(self, address: str, text: str) -> None:
        """``crab.AgentHandle.deliver("telegram", address, text)``: a message from another plugin
        (a reminder) to a chat; only to chats ``allow_from`` admits."""
        if self.api is None or self.stopping:
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
        """Ask the chat with inline buttons; no press within ``ask_timeout`` is a refusal."""
        from crab_telegram.api import TelegramError

        assert self.api is not None
        chat_id, thread = parse_address(address)
        nonce = secrets.token_hex(8)
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self.asks[nonce] = (future, address)
        question = f"crab wants to use {request.tool} ({request.permission}):\n{request.summary}\n\nAllow it?"
        buttons = [
            [
                {"text": "Allow once", "callback_data": f"crab:{nonce}:once"},
                {"text": "Always in this chat", "callback_data": f"crab:{nonce}:always"},
                {"text": "Deny", "callback_data": f"crab:{nonce}:deny"},
            ]
        ]
        try:
            sent = await self.api.call(
                "sendMessage",
                chat_id=chat_id,
                message_thread_id=thread,
                text=question,
                reply_markup={"inline_keyboard": buttons},
            )
            try:
                answer = await asyncio.wait_for(future, self.settings.ask_timeout)
            except TimeoutError:
                answer = "deny"
            message_id = sent.get("message_id") if isinstance(sent, dict) else None
            if isinstance(message_id, int):
                with contextlib.suppress(TelegramError):
                    await self.api.call(
                        "editMessageText",
                        chat_id=chat_id,
                        message_id=message_id,
                        text=f"{question}\n→ {ANSWER_WORDS.get(answer, 'denied')}",
                    )
        except TelegramError:
            answer = "deny"
        finally:
            self.asks.pop(nonce, None)
        return "once" if answer == "once" else "always" if answer == "always" else "deny"


class Stream:
    """A long answer shown as it is written: one message, edited at most every ``edit_interval``
    seconds (Telegram's edit limits), first sent once the turn has run that long."""

    def __init__(self, channel: TelegramChannel, address: str, settings: TelegramSettings) -> None:
        self.channel = channel
        self.address = address
        self.interval = settings.edit_interval
        self.text = ""
        self.shown = ""
        self.message_id: int | None = None
        self.started = time.monotonic()
        self.changed = asyncio.Event()
        self.closing = False

    def on_event(self, event: crab.Event) -> None:
        if isinstance(event, crab.TextDelta):
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
                self.message_id = await self.channel._put(self.address, preview + " …", None, self.message_id)
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
