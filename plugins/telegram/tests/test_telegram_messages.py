"""What a user may send besides a plain new message: a correction (an edit), a photo or a
document with or without a caption; and how an answer comes back: threaded to the user's message."""

from __future__ import annotations

import json
import time
from pathlib import Path

from crab_telegram.incoming import read_message

ADA = 1111111
FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "bot_api.json").read_text())


def test_an_edit_before_the_turn_starts_replaces_the_queued_text(serve, bot_api):
    served = serve()
    bot_api.say("wait a moment", user=ADA)  # a 2 s turn: the next message queues behind it
    typo = bot_api.say("what is the captial of France", user=ADA)
    bot_api.edit(typo, "what is the capital of France", user=ADA)
    bot_api.wait_for("both answers", lambda: len(bot_api.texts(ADA)) == 2, served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == [
        "waited: wait a moment",
        "echo: what is the capital of France (2 user messages)",  # asked once, corrected
    ]


def test_an_edit_after_the_answer_is_a_new_message(serve, bot_api):
    served = serve()
    first = bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    bot_api.edit(first, "hello again", user=ADA)
    bot_api.wait_for("the second answer", lambda: len(bot_api.texts(ADA)) == 2, served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA)[1] == "echo: hello again (2 user messages)"


def test_an_answer_replies_to_the_users_message_once(serve, bot_api):
    served = serve()
    asked = bot_api.say("long please", user=ADA)
    bot_api.wait_for("the whole answer", lambda: any("Tail 9" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr
    first, *rest = bot_api.sent(ADA)
    assert first.params["reply_parameters"] == {"message_id": asked, "allow_sending_without_reply": True}
    assert rest and all("reply_parameters" not in c.params for c in rest)


def test_the_file_ids_are_kept_for_the_images_work() -> None:
    from telegram import Message, User

    raw = dict(FIXTURES["message"], photo=FIXTURES["photo"], caption="look")
    raw.pop("text")
    incoming = read_message(Message.de_json(raw, None), User(**FIXTURES["bot_user"]))
    [photo] = incoming.attachments
    assert (photo.kind, photo.file_id, photo.width, photo.height) == ("photo", "AgACAgIAAxkBAAIBQ2Zlarge", 1280, 960)
    assert incoming.text == "look"


def test_an_edit_that_no_longer_addresses_the_bot_withdraws_the_queued_message(serve, bot_api):
    group = -100555
    served = serve()
    bot_api.say("@crab_test_bot wait a moment", user=ADA, chat=group)  # a 2 s turn: the next one queues
    risky = bot_api.say("@crab_test_bot delete the old branches", user=ADA, chat=group)
    bot_api.edit(risky, "never mind, forget it", user=ADA, chat=group)  # the mention taken back
    bot_api.wait_for("the first answer", lambda: bot_api.texts(group), served.proc)
    bot_api.say("@crab_test_bot hello", user=ADA, chat=group)
    bot_api.wait_for("the last answer", lambda: any("hello" in t for t in bot_api.texts(group)), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(group) == ["waited: wait a moment", "echo: hello (2 user messages)"]


def test_edits_without_text_do_not_answer_again(serve, bot_api):
    """A live location is edited every few seconds for hours: none of its edits is a question."""
    served = serve()
    shared = bot_api.say(None, user=ADA)  # a location: nothing crab can read, said once
    bot_api.wait_for("the one reply", lambda: bot_api.texts(ADA), served.proc)
    for _ in range(3):
        bot_api.edit(shared, None, user=ADA)  # type: ignore[arg-type]
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: len(bot_api.texts(ADA)) >= 2, served.proc)
    time.sleep(0.3)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == [
        "crab reads text, and the captions of photos and documents.",
        "echo: hello (1 user messages)",
    ]


def test_a_command_keeps_every_word_after_it() -> None:
    from crab_telegram.incoming import command_text

    assert command_text("/note@crab_test_bot\nbuy milk") == "/note\nbuy milk"
    assert command_text("/note\nbob@example.com please") == "/note\nbob@example.com please"
    assert command_text("/note@crab_test_bot  two  spaces") == "/note  two  spaces"
    assert command_text("/help@crab_test_bot") == "/help"
    assert command_text("plain @text") == "plain @text"
