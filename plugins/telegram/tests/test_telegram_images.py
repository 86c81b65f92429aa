"""Photos and image documents become image parts through the fake Bot API (getFile, then the
file URL), captions kept; other files stay one line for the model; a fetch that fails says so."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from crab.testing import make_png

ADA = 1111111
FIXTURES = json.loads((Path(__file__).parent / "fixtures" / "bot_api.json").read_text())
LARGE = FIXTURES["photo"][1]["file_id"]  # the largest size of the photo: the one crab fetches
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + bytes(range(256)) * 4
PNG = make_png(5, 4)


def _requests(tg_env: dict[str, str]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(tg_env["TG_TEST_REQUEST_LOG"]).read_text().splitlines()]


def test_a_photo_with_a_caption_reaches_the_model_as_an_image(serve, bot_api, tg_env):
    bot_api.files[LARGE] = JPEG
    served = serve()
    bot_api.say(None, caption="what is on this picture?", photo=True, user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["echo: what is on this picture? (1 user messages)"]
    assert [c.params["file_id"] for c in bot_api.calls if c.method == "getFile"] == [LARGE]
    [request] = _requests(tg_env)
    user = request["messages"][-1]
    assert user["content"] == "what is on this picture?"
    assert user["images"] == [
        {"media_type": "image/jpeg", "sha256": hashlib.sha256(JPEG).hexdigest(), "size": len(JPEG)}
    ]
    assert request["image_bytes"] == [hashlib.sha256(JPEG).hexdigest()]  # the bytes, not only the reference


def test_an_image_document_is_an_image_and_a_pdf_stays_a_line(serve, bot_api, tg_env):
    bot_api.files["PNGdoc"] = PNG
    served = serve()
    bot_api.say(None, document={"file_id": "PNGdoc", "file_name": "chart.png", "mime_type": "image/png"}, user=ADA)
    bot_api.say(None, document={}, user=ADA)  # report.pdf
    bot_api.say(None, user=ADA)  # a sticker, say: nothing crab can read
    bot_api.wait_for("three answers", lambda: len(bot_api.texts(ADA)) == 3, served.proc)
    assert served.stop() == 0, served.stderr
    image, document, nothing = bot_api.texts(ADA)
    assert image == "echo:  (1 user messages)"
    assert document == (
        "echo: [document attached: report.pdf, application/pdf, 24 KB — crab cannot show you its content yet]"
        " (2 user messages)"
    )
    assert nothing == "crab reads text, and the captions of photos and documents."
    assert [c.params["file_id"] for c in bot_api.calls if c.method == "getFile"] == ["PNGdoc"]  # never the PDF
    first = _requests(tg_env)[0]["messages"][-1]
    assert [i["media_type"] for i in first["images"]] == ["image/png"]


def test_a_photo_that_cannot_be_fetched_is_a_note_and_the_caption_still_goes(serve, bot_api, tg_env):
    served = serve()  # bot_api.files holds nothing: getFile answers 400
    bot_api.say(None, caption="look", photo=True, user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    [answer] = bot_api.texts(ADA)
    assert answer.startswith("echo: look\n[photo attached, but crab could not fetch it: getFile: ")
    assert bot_api.token not in answer and bot_api.token not in served.stderr
    assert "images" not in _requests(tg_env)[0]["messages"][-1]


def test_a_document_named_png_that_is_no_image_is_said_so(serve, bot_api, tg_env):
    bot_api.files["fake"] = b"%PDF-1.7 not a picture"
    served = serve()
    bot_api.say(None, document={"file_id": "fake", "file_name": "scan.png", "mime_type": "image/png"}, user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["echo: [document attached: scan.png, not an image] (1 user messages)"]


def test_an_image_over_the_cap_is_refused_in_one_line_and_nothing_is_recorded(serve, bot_api, tg_env):
    bot_api.files["big"] = make_png(40, 40, noise=True)
    served = serve("--set", "crab.max_image_bytes=1024")
    bot_api.say(None, document={"file_id": "big", "file_name": "big.png", "mime_type": "image/png"}, user=ADA)
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("two answers", lambda: len(bot_api.texts(ADA)) == 2, served.proc)
    assert served.stop() == 0, served.stderr
    refused, hello = bot_api.texts(ADA)
    assert refused.startswith("⚠ image is ") and "over the cap of 1.0 KB" in refused
    assert hello == "echo: hello (1 user messages)"  # the refused message never reached the session
