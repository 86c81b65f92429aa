"""Groups: the bot answers only when addressed (``group_mode``), and only the user who asked may
answer a permission question (``permission_answer``; issue 32 item 5)."""

from __future__ import annotations

import json
import time
from pathlib import Path

BOT_USER = json.loads((Path(__file__).parent / "fixtures" / "bot_api.json").read_text())["bot_user"]

ADA = 1111111
BOB = 2222222
GROUP = -100555


def set_config(tg_env: dict[str, str], extra: str) -> None:
    config = Path(tg_env["CRAB_HOME"]) / "config.toml"
    config.write_text(config.read_text() + extra)


def question(bot_api, chat):
    asked = [c for c in bot_api.sent(chat) if c.params.get("reply_markup")]
    if not asked:
        return None
    buttons = asked[-1].params["reply_markup"]["inline_keyboard"][0]
    return {b["text"]: b["callback_data"] for b in buttons}


def bot_message(chat: int, message_id: int) -> dict[str, object]:
    return {"message_id": message_id, "from": BOT_USER, "chat": {"id": chat, "type": "supergroup"},
            "date": int(time.time()), "text": "an earlier answer"}  # fmt: skip


def test_in_a_group_the_bot_answers_only_when_addressed(serve, bot_api):
    served = serve()
    bot_api.say("just chatting among ourselves", user=ADA, chat=GROUP)
    bot_api.say("@crab_test_bot what time is it", user=ADA, chat=GROUP)
    bot_api.say("and then?", user=BOB, chat=GROUP, reply_to=bot_message(GROUP, 42))
    bot_api.say("I reply to Bob, not to the bot", user=ADA, chat=GROUP, reply_to=bot_api.message("hi", user=BOB))
    bot_api.say("/help", user=ADA, chat=GROUP)
    bot_api.say("a private chat needs no mention", user=ADA)
    bot_api.wait_for("four answers", lambda: len(bot_api.texts(GROUP)) == 3 and bot_api.texts(ADA), served.proc)
    time.sleep(0.3)
    assert served.stop() == 0, served.stderr
    mention, reply, helped = bot_api.texts(GROUP)
    assert mention == "echo: what time is it (1 user messages)"  # the mention itself is not handed on
    assert reply == "echo: and then? (2 user messages)"
    assert "/help" in helped
    assert bot_api.texts(ADA) == ["echo: a private chat needs no mention (1 user messages)"]


def test_group_mode_all_answers_every_message(serve, bot_api, tg_env):
    set_config(tg_env, 'group_mode = "all"\n')
    served = serve()
    bot_api.say("just chatting", user=ADA, chat=GROUP)
    bot_api.wait_for("the answer", lambda: bot_api.texts(GROUP), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(GROUP) == ["echo: just chatting (1 user messages)"]


def test_in_a_group_only_the_asker_answers_a_permission_question(serve, bot_api, tg_env):
    config = Path(tg_env["CRAB_HOME"]) / "config.toml"  # the group is listed: every member is let in
    config.write_text(config.read_text().replace('allow_from = ["1111111", "2222222"]', f'allow_from = ["{GROUP}"]'))
    served = serve()
    bot_api.say("@crab_test_bot jot the plan", user=ADA, chat=GROUP)
    buttons = bot_api.wait_for("the question", lambda: question(bot_api, GROUP), served.proc)
    bot_api.press(buttons["Allow once"], user=BOB, chat=GROUP)  # a member of the listed group, not the asker
    bot_api.wait_for("Bob's press to be answered", lambda: bot_api.sent(method="answerCallbackQuery"), served.proc)
    assert not any("jot said" in t for t in bot_api.texts(GROUP))
    bot_api.press(buttons["Allow once"], user=ADA, chat=GROUP)
    bot_api.wait_for(
        "the answer", lambda: any("jot said: noted the plan" in t for t in bot_api.texts(GROUP)), served.proc
    )
    assert served.stop() == 0, served.stderr
    notes = [c.params["text"] for c in bot_api.sent(method="answerCallbackQuery")]
    assert notes == ["only the person who asked crab can answer this", "allowed once"]


def test_permission_answer_chat_lets_anyone_allowed_answer(serve, bot_api, tg_env):
    set_config(tg_env, 'permission_answer = "chat"\n')
    served = serve()
    bot_api.say("@crab_test_bot jot the plan", user=ADA, chat=GROUP)
    buttons = bot_api.wait_for("the question", lambda: question(bot_api, GROUP), served.proc)
    bot_api.press(buttons["Deny"], user=BOB, chat=GROUP)
    bot_api.wait_for("the answer", lambda: any("jot said" in t for t in bot_api.texts(GROUP)), served.proc)
    assert served.stop() == 0, served.stderr
    assert [c.params["text"] for c in bot_api.sent(method="answerCallbackQuery")] == ["denied"]
