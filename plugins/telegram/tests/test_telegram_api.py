"""The Bot API client alone (python-telegram-bot underneath): errors never carry the token,
network errors and 5xx are retried with back-off, a 429's retry_after is waited out, a client
error is not retried, and sends are paced under Telegram's limits."""

from __future__ import annotations

import asyncio
import socket
import time

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
            await api.start()
        finally:
            await api.close()

    with pytest.raises(TelegramError) as caught:
        asyncio.run(go())
    assert str(caught.value).startswith("getMe: ")
    assert "ConnectError" in str(caught.value)
    assert bot_token not in repr(caught.value)
    assert "/bot" not in str(caught.value)
    assert waits == [0.5, 1.0, 2.0]  # backed off between the attempts


def test_a_refused_token_is_a_401_without_the_token(bot_api) -> None:
    async def go() -> None:
        api = BotApi("1234:wrong-token-wrong-token", bot_api.url)
        try:
            await api.start()
        finally:
            await api.close()

    with pytest.raises(TelegramError) as caught:
        asyncio.run(go())
    assert caught.value.token_refused
    assert "wrong-token" not in str(caught.value)  # the library's own message quotes the token


def test_retry_after_is_waited_and_a_client_error_is_not_retried(bot_api, bot_token: str) -> None:
    too_many = {
        "ok": False,
        "error_code": 429,
        "description": "Too Many Requests: retry after 1",
        "parameters": {"retry_after": 1},
    }
    bot_api.fail("sendMessage", too_many, times=1)
    bot_api.fail(
        "editMessageText", {"ok": False, "error_code": 400, "description": "Bad Request: message to edit not found"}
    )

    async def go() -> None:
        api = BotApi(bot_token, bot_api.url)
        try:
            assert await api.send_message(1, "hi") is not None
            with pytest.raises(TelegramError, match=r"(?i)message to edit not found") as caught:
                await api.edit_message_text(1, 5, "x")
            assert caught.value.code == 400
        finally:
            await api.close()

    asyncio.run(go())
    refused, accepted = bot_api.sent(method="sendMessage")
    assert accepted.time - refused.time >= 0.9  # the second Telegram asked for
    assert len(bot_api.sent(method="editMessageText")) == 1


def test_a_5xx_is_retried(bot_api, bot_token: str) -> None:
    bot_api.fail("sendMessage", {"ok": False, "error_code": 500, "description": "Internal Server Error"}, times=2)

    async def no_wait(seconds: float) -> None:
        return None

    async def go() -> None:
        api = BotApi(bot_token, bot_api.url, sleep=no_wait)
        try:
            await api.send_message(1, "hi")
        finally:
            await api.close()

    asyncio.run(go())
    assert len(bot_api.sent(method="sendMessage")) == 3


def test_sends_to_a_group_are_paced_under_twenty_a_minute(bot_api, bot_token: str) -> None:
    # Telegram: at most 20 messages a minute in one group. The 21st waits for room (3 s) instead
    # of drawing a 429; a private chat in the meantime is not held up by the group's budget.
    async def go() -> float:
        api = BotApi(bot_token, bot_api.url)
        try:
            for i in range(20):
                await api.send_message(-100123, f"burst {i}")
            group = asyncio.create_task(api.send_message(-100123, "the 21st"))
            await asyncio.sleep(0.3)
            await api.send_message(1111111, "private")
            started = time.monotonic()
            await group
            return time.monotonic() - started
        finally:
            await api.close()

    asyncio.run(go())
    sent = bot_api.sent(-100123)
    assert len(sent) == 21
    assert sent[-1].time - sent[0].time >= 2.5
    assert bot_api.sent(1111111)[0].time < sent[-1].time


def test_a_library_message_becomes_one_bounded_line() -> None:
    from crab_telegram.api import MAX_DETAIL, describe

    page = "<html>\r\n<body>" + "x" * 5000 + "</body></html>"
    said = describe(f"Bad Gateway (502). Parsing the server response {page.encode()!r} failed")
    assert (
        said
        == "Bad Gateway (502): the answer was not the Bot API's JSON (an error page from a proxy or Telegram's front)"
    )
    long = describe("Conflict:\n" + "word " * 200)
    assert "\n" not in long and len(long) == MAX_DETAIL and long.endswith("…")
    assert describe("Bad Request: message is too long") == "Bad Request: message is too long"
