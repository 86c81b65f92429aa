"""A tool's question (``crab.Question``) in a chat, through the fake Bot API: buttons for its
choices, the user's next message for words, and nothing written before it was shown."""

from __future__ import annotations

import json
import time
from pathlib import Path

BOT_USER = json.loads((Path(__file__).parent / "fixtures" / "bot_api.json").read_text())["bot_user"]
ADA = 1111111
EVE = 6666666


def asked(bot_api, chat, needle="crab asks:"):
    """The question message sent to ``chat`` and its buttons' callback data by label."""
    found = [c for c in bot_api.sent(chat) if needle in str(c.params.get("text"))]
    if not found:
        return None
    markup = found[-1].params.get("reply_markup") or {"inline_keyboard": []}
    return found[-1], {row[0]["text"]: row[0]["callback_data"] for row in markup["inline_keyboard"]}


def test_a_choice_is_a_button_only_the_asker_can_press(serve, bot_api):
    served = serve()
    bot_api.say("pick a database", user=ADA)
    call, buttons = bot_api.wait_for("the question", lambda: asked(bot_api, ADA), served.proc)
    assert "Which database?" in call.params["text"] and "2. PostgreSQL" in call.params["text"]
    assert list(buttons) == ["1. SQLite", "2. PostgreSQL"]
    bot_api.press(buttons["2. PostgreSQL"], user=EVE, chat=EVE)  # a stranger's press does nothing
    time.sleep(0.3)
    assert not any("picked" in t for t in bot_api.texts(ADA))
    bot_api.press(buttons["2. PostgreSQL"], user=ADA, chat=ADA)
    bot_api.wait_for(
        "the answer", lambda: any("jot said: picked PostgreSQL" in t for t in bot_api.texts(ADA)), served.proc
    )
    assert served.stop() == 0, served.stderr
    assert any(t.endswith("→ PostgreSQL") for t in bot_api.texts(ADA))  # the question shows its answer
    assert [c.params["text"] for c in bot_api.sent(method="answerCallbackQuery")] == ["answered: PostgreSQL"]


def test_words_answer_with_the_next_message_but_not_one_written_before_the_question(serve, bot_api):
    served = serve()
    bot_api.say("wonder about a name", user=ADA)
    bot_api.wait_for("the question", lambda: asked(bot_api, ADA), served.proc)
    # A message Telegram dated before the question was sent (typed ahead, delivered late): its own input.
    early = bot_api.message("typed before", user=ADA)
    early["date"] = int(time.time()) - 5
    with bot_api.lock:
        early["message_id"] = bot_api.next_update_id
    bot_api.arrive({"message": early})
    time.sleep(1.1)  # the answer is written in a later second than the question was sent
    bot_api.say("Crabapple", user=ADA)
    bot_api.wait_for(
        "the answer", lambda: any("jot said: picked Crabapple" in t for t in bot_api.texts(ADA)), served.proc
    )
    # The early message was not the answer: it is answered as an input of its own, after the turn.
    bot_api.wait_for("the early input", lambda: any("echo: typed before" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr


def test_a_reply_to_the_question_answers_it_and_words_do_not_answer_closed_choices(serve, bot_api):
    served = serve()
    bot_api.say("pick one", user=ADA)
    call, _ = bot_api.wait_for("the question", lambda: asked(bot_api, ADA), served.proc)
    time.sleep(1.1)
    bot_api.say("MariaDB", user=ADA)  # the choices are closed: not an answer
    bot_api.wait_for("the hint", lambda: any("Press one of the buttons" in t for t in bot_api.texts(ADA)), served.proc)
    # A reply to the question was written after it was shown, whatever its date says (a clock off).
    question = {"message_id": call.message_id, "chat": {"id": ADA, "type": "private"}, "date": 0, "text": "?"}
    reply = bot_api.message("sqlite", user=ADA, reply_to=question)
    reply["date"] = int(time.time()) - 5
    with bot_api.lock:
        reply["message_id"] = bot_api.next_update_id
    bot_api.arrive({"message": reply})
    bot_api.wait_for("the answer", lambda: any("jot said: picked SQLite" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr


def test_a_message_written_before_the_question_does_not_answer_it_when_this_hosts_clock_lags(serve, bot_api):
    """Telegram dates messages by its clock: with this host 30 s behind it, a message typed 5 s
    before the question still carries a date after this host's time of sending."""
    bot_api.clock_ahead = 30.0
    served = serve()
    bot_api.say("wonder about a name", user=ADA)
    bot_api.wait_for("the question", lambda: asked(bot_api, ADA), served.proc)
    early = bot_api.message("typed before", user=ADA)
    early["date"] = int(time.time() + bot_api.clock_ahead) - 5
    with bot_api.lock:
        early["message_id"] = bot_api.next_update_id
    bot_api.arrive({"message": early})
    time.sleep(1.1)  # the answer is written in a later second than the question was sent
    bot_api.say("Crabapple", user=ADA)
    bot_api.wait_for(
        "the answer", lambda: any("jot said: picked Crabapple" in t for t in bot_api.texts(ADA)), served.proc
    )
    bot_api.wait_for("the early input", lambda: any("echo: typed before" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr


BOB = 2222222
STRANGER = 3333333
GROUP = -100555


def later(bot_api, text, **how):
    """A message Telegram dates a second after now (written after the question, without sleeping
    into the next second)."""
    message = bot_api.message(text, **how)
    message["date"] = int(time.time() + bot_api.clock_ahead) + 1
    with bot_api.lock:
        message["message_id"] = bot_api.next_update_id
    return bot_api.arrive({"message": message})


def test_in_a_group_only_the_askers_words_answer_and_a_strangers_are_dropped(serve, bot_api):
    """Bob is allowed too, and his reply comes after the question: it is his own input, not the
    answer to Ada's question; a stranger's reply is not even read."""
    served = serve()
    bot_api.say("@crab_test_bot wonder about a name", user=ADA, chat=GROUP)
    call, _ = bot_api.wait_for("the question", lambda: asked(bot_api, GROUP), served.proc)
    question = {"message_id": call.message_id, "from": BOT_USER, "chat": {"id": GROUP, "type": "supergroup"},
                "date": 0, "text": "?"}  # fmt: skip
    later(bot_api, "Strangename", user=STRANGER, chat=GROUP, reply_to=question)
    later(bot_api, "Bobname", user=BOB, chat=GROUP, reply_to=question)
    later(bot_api, "Crabapple", user=ADA, chat=GROUP, reply_to=question)
    bot_api.wait_for(
        "the answer", lambda: any("jot said: picked Crabapple" in t for t in bot_api.texts(GROUP)), served.proc
    )
    bot_api.wait_for("Bob's input", lambda: any("echo: Bobname" in t for t in bot_api.texts(GROUP)), served.proc)
    assert served.stop() == 0, served.stderr
    texts = bot_api.texts(GROUP)
    assert any(t.endswith("→ Crabapple") for t in texts)  # the question shows whose answer it took
    assert not any("Strangename" in t for t in texts)
    assert "ignored a message from user 3333333" in served.stderr


def test_an_edit_made_after_the_question_does_not_answer_it(serve, bot_api):
    """Editing the message being answered (written before the question, whatever the edit says)
    is a new input of its own; the answer is the next message."""
    served = serve()
    asking = bot_api.say("wonder about a name", user=ADA)
    bot_api.wait_for("the question", lambda: asked(bot_api, ADA), served.proc)
    # Dated a second later still (as if Telegram gave an edit its own date): an edit never answers.
    edited = bot_api.message("Editedname", user=ADA)
    edited.update(message_id=asking, date=int(time.time()) + 1, edit_date=int(time.time()) + 1)
    bot_api.arrive({"edited_message": edited})
    later(bot_api, "Crabapple", user=ADA)
    bot_api.wait_for(
        "the answer", lambda: any("jot said: picked Crabapple" in t for t in bot_api.texts(ADA)), served.proc
    )
    bot_api.wait_for("the edit's turn", lambda: any("echo: Editedname" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr
    assert not any("picked Editedname" in t for t in bot_api.texts(ADA))


def test_an_answer_polled_before_crab_read_the_questions_send_still_answers_it(serve, bot_api):
    """Telegram showed the question and the user answered, but Telegram's reply to the send
    reached crab after the poll that carries the answer: the answer still answers."""
    served = serve()
    late = bot_api.answer_late("sendMessage")
    bot_api.say("wonder about a name", user=ADA)
    bot_api.wait_for("the question", lambda: asked(bot_api, ADA), served.proc)
    answer = later(bot_api, "Crabapple", user=ADA)
    bot_api.wait_for("the answer's poll", lambda: answer in bot_api.delivered, served.proc)
    late.set()
    bot_api.wait_for(
        "the answer", lambda: any("jot said: picked Crabapple" in t for t in bot_api.texts(ADA)), served.proc
    )
    assert served.stop() == 0, served.stderr
