"""The Bot API over httpx: one JSON POST per method, ``retry_after`` honoured, network errors
retried with back-off, and the token kept out of every error line.

``BotApi.call(method, **params)`` returns the ``result`` of ``{"ok": true, "result": …}``.
``{"ok": false}`` raises ``TelegramError`` with Telegram's ``description`` and ``error_code``; a 429's
``parameters.retry_after`` is waited out and the call repeated (up to ``max_retries`` times).
The URL holds the token (``/bot<token>/<method>``): errors name the method, never the URL.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    import httpx

MAX_BACKOFF = 30.0


class TelegramError(Exception):
    """A Bot API call that failed: Telegram said no, or the network did."""

    def __init__(self, message: str, code: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after

    @property
    def parse_error(self) -> bool:
        """Telegram could not parse the formatting (``can't parse entities``)."""
        return self.code == 400 and "parse" in str(self).lower()

    @property
    def not_modified(self) -> bool:
        """An edit that changed nothing (harmless)."""
        return self.code == 400 and "not modified" in str(self).lower()


class BotApi:
    """A Bot API client for one token; ``close`` when done."""

    def __init__(
        self,
        token: str,
        base_url: str,
        *,
        timeout: float = 30.0,
        max_retries: int = 5,
        sleep: Callable[[float], Any] | None = None,
        redact: crab.Redactor | None = None,
    ) -> None:
        import httpx

        self._url = f"{base_url.rstrip('/')}/bot{token}/"
        self._redactor = redact or crab.Redactor([token])
        self._token_redactor = crab.Redactor([token])
        self.timeout = timeout
        self.max_retries = max_retries
        self._sleep = sleep or asyncio.sleep
        self._client: httpx.AsyncClient = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=10.0))

    async def close(self) -> None:
        await self._client.aclose()

    async def call(
        self, method: str, *, http_timeout: float | None = None, retries: int | None = None, **params: Any
    ) -> Any:
        """``method`` with ``params`` (None values left out; every ``text`` redacted); see the
        module docstring. ``http_timeout`` replaces the client's for this call (a long poll);
        ``retries`` replaces ``max_retries`` (0 for a call not worth waiting for)."""
        limit = self.max_retries if retries is None else retries
        body = {k: v for k, v in params.items() if v is not None}
        if isinstance(body.get("text"), str):
            body["text"] = self._redactor.text(body["text"]) or "…"
        attempt = 0
        while True:
            try:
                return await self._once(method, body, http_timeout)
            except TelegramError as exc:
                attempt += 1
                if attempt > limit:
                    raise
                if exc.retry_after is not None:
                    await self._sleep(exc.retry_after)
                elif exc.code is None or exc.code >= 500:
                    await self._sleep(min(MAX_BACKOFF, 0.5 * 2 ** (attempt - 1)))
                else:
                    raise

    async def _once(self, method: str, body: dict[str, Any], timeout: float | None) -> Any:
        import httpx

        try:
            response = await self._client.post(
                self._url + method,
                content=json.dumps(body, ensure_ascii=False).encode("utf-8"),
                headers={"Content-Type": "application/json"},
                timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else httpx.Timeout(timeout, connect=10.0),
            )
        except httpx.HTTPError as exc:
            # str(exc) can quote the URL, and the URL holds the token: name the kind only.
            raise TelegramError(f"{method}: network error ({type(exc).__name__})") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise TelegramError(f"{method}: HTTP {response.status_code} without a Bot API answer", response.status_code)
        if data.get("ok") is True:
            return data.get("result")
        code = data.get("error_code")
        description = self._token_redactor.text(str(data.get("description") or "no description"))
        parameters = data.get("parameters")
        retry_after = parameters.get("retry_after") if isinstance(parameters, dict) else None
        wait = (
            float(retry_after) if isinstance(retry_after, int | float) and not isinstance(retry_after, bool) else None
        )
        if wait is None and code == 429:
            wait = 1.0
        return_code = code if isinstance(code, int) and not isinstance(code, bool) else response.status_code
        raise TelegramError(f"{method}: {description}", return_code, None if wait is None else min(wait, 3600.0))
