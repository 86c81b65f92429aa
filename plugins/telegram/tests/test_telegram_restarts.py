"""What nothing in an update, a webhook or a crash may do to the bot: stop it, make it deaf, or
make it record and answer one message twice (issue 32 items 3, 4 and 17)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from crab_telegram.channel import INTERRUPTED

ADA = 1111111


def with_file_store(tg_env: dict[str, str]) -> dict[str, str]:
    """The environment with the test's file store enabled (a store that survives kill -9)."""
    return dict(tg_env, CRAB_PLUGINS=tg_env["CRAB_PLUGINS"] + ",tg-store")


def stored_user_texts(tg_env: dict[str, str]) -> list[str]:
    """Every user message the persistent test store holds, in order."""
    path = Path(tg_env["TG_TEST_STORE"])
    if not path.exists():
        return []
    texts = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        payload = row.get("entry", {}).get("payload", {})
        if row["kind"] == "entry" and payload.get("role") == "user":
            texts.append(str(payload.get("content")))
    return texts


def test_one_bad_update_never_stops_the_bot(serve, bot_api):
    served = serve()
    lone = bot_api.say("probe \ud83d alone", user=ADA)  # a lone surrogate: sent as JSON "\ud83d"
    broken = bot_api.arrive({"message": {"message_id": 7, "date": 0, "chat": "not a chat"}})
    chatless = bot_api.arrive({"message": {"message_id": 8, "date": 0, "text": "where am I?"}})
    after = bot_api.say("still there?", user=ADA)
    bot_api.wait_for("both answers", lambda: len(bot_api.texts(ADA)) == 2, served.proc)
    bot_api.wait_for(
        "the offset to move past them",
        lambda: any((c.params.get("offset") or 0) > after for c in bot_api.sent(method="getUpdates")),
        served.proc,
    )
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["echo: probe \ufffd alone (1 user messages)", "echo: still there? (2 user messages)"]
    warnings = [line for line in served.stderr.splitlines() if "skipped update" in line]
    assert len(warnings) == 2, served.stderr
    assert f"skipped update {broken}" in warnings[0] and f"skipped update {chatless}" in warnings[1]
    assert lone < broken < chatless < after
    assert "Traceback" not in served.stderr


def test_a_webhook_left_set_is_deleted_at_start(serve, bot_api):
    # With a webhook set, Telegram answers getUpdates with 409 forever: the bot would be deaf.
    bot_api.webhook = "https://example.org/hook"
    served = serve()
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    methods = [c.method for c in bot_api.calls]
    assert methods.index("getMe") < methods.index("deleteWebhook") < methods.index("getUpdates")
    assert bot_api.sent(method="deleteWebhook")[0].params.get("drop_pending_updates") is False
    assert "409" not in served.stderr and "Conflict" not in served.stderr


def test_a_command_for_another_bot_is_not_answered(serve, bot_api):
    served = serve()
    bot_api.say("/help@SomeOtherBot", user=ADA)
    bot_api.say("/start@SomeOtherBot", user=ADA)
    bot_api.say("/help@Crab_Test_Bot", user=ADA)  # usernames are case-insensitive
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    time.sleep(0.3)
    assert served.stop() == 0, served.stderr
    [helped] = bot_api.texts(ADA)
    assert "/help" in helped


def test_kill_9_mid_turn_never_records_or_runs_the_message_twice(serve, bot_api, tg_env):
    served = serve("--store", "tg-file", env=with_file_store(tg_env))
    bot_api.say("stall for me", user=ADA)
    bot_api.wait_for("the message to be recorded", lambda: stored_user_texts(tg_env) == ["stall for me"], served.proc)
    served.proc.kill()  # mid-turn: the model is still "thinking" (30 s)
    served.proc.communicate()
    again = serve("--store", "tg-file", env=with_file_store(tg_env))
    bot_api.wait_for("the chat to hear of it", lambda: bot_api.texts(ADA), again.proc)
    bot_api.say("next", user=ADA)
    bot_api.wait_for("the next answer", lambda: len(bot_api.texts(ADA)) == 2, again.proc)
    assert again.stop() == 0, again.stderr
    assert bot_api.texts(ADA) == [INTERRUPTED, "echo: next (2 user messages)"]
    assert stored_user_texts(tg_env) == ["stall for me", "next"]
    requests = [json.loads(line) for line in Path(tg_env["TG_TEST_REQUEST_LOG"]).read_text().splitlines()]
    asked = [sum(m.get("content") == "stall for me" for m in r["messages"] if m["role"] == "user") for r in requests]
    assert max(asked) == 1  # the model never saw the question twice


def test_an_answer_finished_before_a_crash_is_sent_not_made_again(serve, bot_api, tg_env):
    served = serve("--store", "tg-file", env=with_file_store(tg_env))
    bot_api.hold("sendMessage")  # the answer is on its way out when crab dies
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer to be sent", lambda: bot_api.sent(ADA, "held:sendMessage"), served.proc)
    served.proc.kill()
    served.proc.communicate()
    bot_api.release("sendMessage")
    again = serve("--store", "tg-file", env=with_file_store(tg_env))
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), again.proc)
    assert again.stop() == 0, again.stderr
    assert bot_api.texts(ADA) == ["echo: hello (1 user messages)"]  # the stored answer, not a second turn
    assert stored_user_texts(tg_env) == ["hello"]
    assert len(Path(tg_env["TG_TEST_REQUEST_LOG"]).read_text().splitlines()) == 1


def test_telegram_unreachable_at_start_is_tried_again(serve, bot_api):
    bad_gateway = {"ok": False, "error_code": 502, "description": "Bad Gateway"}
    bot_api.fail("getMe", bad_gateway, times=2)
    served = serve()
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert len(bot_api.sent(method="getMe")) == 3
    assert served.stderr.count("telegram: getMe: Bad Gateway; trying again in") == 2, served.stderr
