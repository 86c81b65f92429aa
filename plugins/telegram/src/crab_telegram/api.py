"""The Bot API through python-telegram-bot: the ``ExtBot`` built on crab's settings, the few calls
the channel makes, retries, and error lines that never carry the token.

python-telegram-bot does the transport (its httpx request), the wire format, parsing into
``telegram.Update``/``Message`` objects, and pacing: its ``AIORateLimiter`` keeps sends under
Telegram's limits (30 a second overall, 20 a minute per group) and waits out a 429's
``retry_after``. What it leaves to its ``Application``, which crab does not use (crab owns the
lifecycle), is done here: network errors and 5xx are retried with back-off (``call``), and every
failure becomes a ``TelegramError`` naming the method, with the token masked (the library's own
messages can quote it: ``InvalidToken`` does, and ``repr(bot)`` shows it).

Incoming updates are read by ``IntakeRequest``, a ``get_updates`` request whose JSON decoding
(the library's documented extension point) cleans each update before the library parses it:
lone surrogates become U+FFFD (Telegram's JSON can carry them; no store can write them), secrets
are masked, and an update the library cannot parse is replaced by an empty one and reported in
``skipped``, so one bad update never fails the whole batch (the offset still moves past it).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import crab

if TYPE_CHECKING:
    from telegram import Update, User
    from telegram.ext import ExtBot

T = TypeVar("T")
MAX_BACKOFF = 30.0
RATE_LIMIT_RETRIES = 5
"""429s in a row waited out (each for Telegram's ``retry_after``) before a send gives up."""
MAX_DETAIL = 300
"""Characters of the library's message a ``TelegramError`` keeps (it goes into one warning line)."""
PARSE_FAILED = ". Parsing the server response "
"""How python-telegram-bot goes on after the HTTP status when the body is not JSON, quoting it whole."""
_SURROGATE = re.compile("[\ud800-\udfff]")


class TelegramError(Exception):
    """A Bot API call that failed: Telegram said no, or the network did."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code

    @property
    def parse_error(self) -> bool:
        """Telegram could not parse the formatting (``can't parse entities``)."""
        return self.code == 400 and "parse" in str(self).lower()

    @property
    def not_modified(self) -> bool:
        """An edit that changed nothing (harmless)."""
        return self.code == 400 and "not modified" in str(self).lower()

    @property
    def token_refused(self) -> bool:
        return self.code in (401, 404)


@dataclass(frozen=True, slots=True)
class Skipped:
    """An update crab could not take: its id (the offset moves past it) and why."""

    update_id: int
    reason: str


def clean_text(value: Any) -> Any:
    """``value`` (JSON data) with every lone surrogate replaced by U+FFFD."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value) if _SURROGATE.search(value) else value
    if isinstance(value, list):
        return [clean_text(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k): clean_text(v) for k, v in value.items()}
    return value


def quiet_library_logs(redactor: crab.secrets.Redactor) -> None:
    """The library's log lines never reach the terminal (crab prints its own one-line notices),
    and httpx's request lines, which quote the URL and so the token, are masked for any handler
    another plugin may install. Its deprecation warnings, which it raises from its own code (a
    429's ``RetryAfter`` warns about itself in v22), are for developers, not a chat's log."""
    import warnings

    from telegram.warnings import PTBDeprecationWarning

    warnings.filterwarnings("ignore", category=PTBDeprecationWarning)

    class Mask(logging.Filter):
        def filter(self, record: logging.LogRecord) -> bool:
            record.msg = redactor.text(record.getMessage()) or ""
            record.args = None
            return True

    library = logging.getLogger("telegram")
    library.propagate = False
    if not any(isinstance(h, logging.NullHandler) for h in library.handlers):
        library.addHandler(logging.NullHandler())
    httpx_log = logging.getLogger("httpx")
    httpx_log.filters = [f for f in httpx_log.filters if type(f).__name__ != "Mask"]
    httpx_log.addFilter(Mask())


def _intake_request(redactor: crab.secrets.Redactor, read_timeout: float) -> Any:
    from telegram import Update
    from telegram.request import HTTPXRequest

    class IntakeRequest(HTTPXRequest):
        """See the module docstring."""

        skipped: list[Skipped]

        # The library calls it through the instance (``self.parse_json_payload``), so an instance
        # method may replace its static one: this one needs the redactor and the skip list.
        def parse_json_payload(self, payload: bytes) -> Any:  # type: ignore[override]
            data = super().parse_json_payload(payload)
            result = data.get("result") if isinstance(data, dict) else None
            if not isinstance(result, list):
                return data
            kept: list[Any] = []
            for raw in result:
                update_id = raw.get("update_id") if isinstance(raw, dict) else None
                if not isinstance(update_id, int) or isinstance(update_id, bool):
                    continue  # no id: nothing to confirm or answer
                try:
                    update = redactor.payload(clean_text(raw))
                    json.dumps(update, ensure_ascii=False).encode("utf-8")  # the journal can write it
                    Update.de_json(update, None)
                except Exception as exc:  # a malformed update of any kind: the library raises many
                    self.skipped.append(Skipped(update_id, f"{type(exc).__name__}: {exc}"[:200]))
                    update = {"update_id": update_id}
                kept.append(update)
            return {**data, "result": kept}

    request = IntakeRequest(read_timeout=read_timeout, connect_timeout=10.0, connection_pool_size=2)
    request.skipped = []
    return request


def _code_of(exc: Exception) -> int | None:
    from telegram import error

    for kind, code in (
        (error.RetryAfter, 429),
        (error.InvalidToken, 401),
        (error.Forbidden, 403),
        (error.Conflict, 409),
        (error.BadRequest, 400),
        (error.ChatMigrated, 400),
    ):
        if isinstance(exc, kind):
            return code
    return None  # NetworkError, TimedOut and 5xx: worth retrying


class BotApi:
    """The Bot API for one token; ``start`` before use, ``close`` when done."""

    def __init__(
        self,
        token: str,
        base_url: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 5,
        sleep: Callable[[float], Awaitable[Any]] | None = None,
        redact: crab.secrets.Redactor | None = None,
    ) -> None:
        from telegram.ext import AIORateLimiter, ExtBot
        from telegram.request import HTTPXRequest

        self._redactor = redact or crab.secrets.Redactor([token])
        self._token_redactor = crab.secrets.Redactor([token])
        quiet_library_logs(self._token_redactor)
        self.max_retries = max_retries
        self._sleep = sleep or asyncio.sleep
        self._intake = _intake_request(self._redactor, timeout)
        self.bot: ExtBot[Any] = ExtBot(
            token,
            base_url=f"{base_url.rstrip('/')}/bot",
            base_file_url=f"{base_url.rstrip('/')}/file/bot",
            request=HTTPXRequest(read_timeout=timeout, write_timeout=timeout, connect_timeout=10.0),
            get_updates_request=self._intake,
            rate_limiter=AIORateLimiter(max_retries=RATE_LIMIT_RETRIES),
        )
        self.me: User | None = None

    # --- the calls ------------------------------------------------------------------------------

    async def start(self, retries: int | None = None) -> User:
        """``getMe`` (the bot's own @username) and ``deleteWebhook``: a webhook left set makes
        ``getUpdates`` answer 409 forever. Updates waiting are kept (``drop_pending_updates`` off)."""
        await self.call("getMe", lambda bot: bot.initialize(), retries=retries)
        self.me = self.bot.bot
        await self.call("deleteWebhook", lambda bot: bot.delete_webhook(drop_pending_updates=False), retries=retries)
        return self.me

    async def close(self) -> None:
        try:
            await self.bot.shutdown()
        except Exception:
            pass  # closing connections: nothing left to report

    async def get_updates(
        self, offset: int | None, timeout: int, allowed: Sequence[str]
    ) -> tuple[list[Update], list[Skipped]]:
        """One long poll; the updates parsed, and those skipped (see the module docstring)."""
        self._intake.skipped = []
        updates = await self.call(
            "getUpdates",
            lambda bot: bot.get_updates(offset=offset, timeout=timeout, allowed_updates=list(allowed)),
            retries=0,
        )
        skipped, self._intake.skipped = self._intake.skipped, []
        return list(updates), skipped

    async def send_message(self, chat_id: int, text: str, **params: Any) -> int | None:
        """Send ``text`` (masked); returns the new message's id."""
        message_id, _ = await self.send_message_dated(chat_id, text, **params)
        return message_id

    async def send_message_dated(self, chat_id: int, text: str, **params: Any) -> tuple[int | None, float | None]:
        """Send ``text`` (masked); the new message's id and the time Telegram dated it (its clock,
        which dates the user's messages too: what was written after it is told by that, not by ours)."""
        sent = await self.call(
            "sendMessage", lambda bot: bot.send_message(chat_id, self._mask(text), **_present(params))
        )
        date = getattr(sent, "date", None)
        return sent.message_id, date.timestamp() if date is not None else None

    async def edit_message_text(self, chat_id: int, message_id: int, text: str, **params: Any) -> None:
        await self.call(
            "editMessageText",
            lambda bot: bot.edit_message_text(
                self._mask(text), chat_id=chat_id, message_id=message_id, **_present(params)
            ),
        )

    async def send_chat_action(self, chat_id: int, thread: int | None) -> None:
        await self.call(
            "sendChatAction",
            lambda bot: bot.send_chat_action(chat_id, "typing", **_present({"message_thread_id": thread})),
            retries=0,
        )

    async def download(self, file_id: str, limit: int) -> bytes:
        """A file a user sent: ``getFile`` for its path, then its bytes from the file URL.

        Raises ``TelegramError`` when Telegram says the file is bigger than ``limit`` bytes
        (Telegram lets bots download at most 20 MB) or the download fails.
        """
        found = await self.call("getFile", lambda bot: bot.get_file(file_id))
        if found.file_size is not None and found.file_size > limit:
            raise TelegramError(f"getFile: the file is {found.file_size} bytes, more than {limit}")
        data = await self.call("getFile download", lambda bot: found.download_as_bytearray())
        if len(data) > limit:
            raise TelegramError(f"getFile: the file is {len(data)} bytes, more than {limit}")
        return bytes(data)

    async def answer_callback_query(self, query_id: str, text: str) -> None:
        await self.call("answerCallbackQuery", lambda bot: bot.answer_callback_query(query_id, text=text))

    async def set_my_commands(self, commands: list[tuple[str, str]]) -> None:
        await self.call("setMyCommands", lambda bot: bot.set_my_commands(commands))

    def _mask(self, text: str) -> str:
        return self._redactor.text(text) or "…"

    # --- retries and errors ---------------------------------------------------------------------

    async def call(self, method: str, run: Callable[[ExtBot[Any]], Awaitable[T]], *, retries: int | None = None) -> T:
        """``run(bot)``, retried on network errors and 5xx with back-off (up to ``retries``,
        default ``max_retries``); a failure is a ``TelegramError`` naming ``method``."""
        from telegram.error import TelegramError as LibraryError

        limit = self.max_retries if retries is None else retries
        attempt = 0
        while True:
            try:
                return await run(self.bot)
            except LibraryError as exc:
                code = _code_of(exc)
                attempt += 1
                if code is not None or attempt > limit:
                    detail = describe(self._token_redactor.text(exc.message) or type(exc).__name__)
                    raise TelegramError(f"{method}: {detail}", code) from None
                await self._sleep(min(MAX_BACKOFF, 0.5 * 2 ** (attempt - 1)))


def describe(message: str) -> str:
    """The library's message as one bounded line: an answer that was not Telegram's JSON (a
    proxy's or Telegram's front's HTML error page) is named, never quoted whole, since the library
    quotes it (``... Parsing the server response b'<html>...' failed``) and every failed poll
    would print the page again."""
    head, quoted, _ = message.partition(PARSE_FAILED)
    if quoted:
        message = f"{head}: the answer was not the Bot API's JSON (an error page from a proxy or Telegram's front)"
    line = " ".join(message.split())
    return line if len(line) <= MAX_DETAIL else line[: MAX_DETAIL - 1] + "…"


def _present(params: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in params.items() if v is not None}
