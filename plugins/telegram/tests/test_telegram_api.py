"""The Bot API client alone: errors never carry the token; retry_after and 5xx are retried."""

from __future__ import annotations

import asyncio
import socket

import pytest
from crab_telegram.api import BotApi, TelegramError


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_network_error_names_the_method_not_the_url(bot_token: str) -> None:
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    async def go() -> None:
        api = BotApi(bot_token, f"http://127.0.0.1:{closed_port()}", max_retries=3, sleep=no_wait)
        try:
            await api.call("getMe")
        finally:
            await api.close()

    with pytest.raises(TelegramError) as caught:
        asyncio.run(go())
    assert str(caught.value) == "getMe: network error (ConnectError)"
    assert bot_token not in repr(caught.value)
    assert waits == [0.5, 1.0, 2.0]  # backed off between the attempts


def test_retry_after_is_waited_and_a_client_error_is_not_retried(bot_api, bot_token: str) -> None:
    waits: list[float] = []

    async def no_wait(seconds: float) -> None:
        waits.append(seconds)

    too_many = {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 7",
        "parameters": {"retry_after": 7},
    }
    bot_api.fail("sendMessage", too_many, times=2)
    bot_api.fail(
        "editMessageText", {"ok": False, "error_code": 400, "description": "Bad Request: message to edit not found"}
    )

    async def go() -> None:
        api = BotApi(bot_token, bot_api.url, sleep=no_wait)
        try:
            sent = await api.call("sendMessage", chat_id=1, text="hi")
            assert sent["text"] == "hi"
            with pytest.raises(TelegramError, match="message to edit not found"):
                await api.call("editMessageText", chat_id=1, message_id=5, text="x")
        finally:
            await api.close()

    asyncio.run(go())
    assert waits == [7.0, 7.0]
    assert len(bot_api.sent(method="editMessageText")) == 1
