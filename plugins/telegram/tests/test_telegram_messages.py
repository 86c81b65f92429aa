"""What a user may send besides a plain new message: a correction (an edit), a photo or a
document with or without a caption; and how an answer comes back: threaded to the user's message."""

from __future__ import annotations

import json
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


def test_captions_photos_and_documents_are_handed_on(serve, bot_api):
    served = serve()
    bot_api.say(None, caption="what is on this picture?", photo=True, user=ADA)
    bot_api.say(None, document={}, user=ADA)
    bot_api.say(None, user=ADA)  # a sticker, say: nothing crab can read
    bot_api.wait_for("three answers", lambda: len(bot_api.texts(ADA)) == 3, served.proc)
    assert served.stop() == 0, served.stderr
    photo, document, nothing = bot_api.texts(ADA)
    assert photo == (
        "echo: what is on this picture?\n"
        "[photo attached: 1280×960, 100 KB — crab cannot show you its content yet] (1 user messages)"
    )
    assert document == (
        "echo: [document attached: report.pdf, application/pdf, 24 KB — crab cannot show you its content yet]"
        " (2 user messages)"
    )
    assert nothing == "crab reads text, and the captions of photos and documents."


def test_the_file_ids_are_kept_for_the_images_work() -> None:
    from telegram import Message, User

    raw = dict(FIXTURES["message"], photo=FIXTURES["photo"], caption="look")
    raw.pop("text")
    incoming = read_message(Message.de_json(raw, None), User(**FIXTURES["bot_user"]))
    [photo] = incoming.attachments
    assert (photo.kind, photo.file_id, photo.width, photo.height) == ("photo", "AgACAgIAAxkBAAIBQ2Zlarge", 1280, 960)
    assert incoming.text == "look"
