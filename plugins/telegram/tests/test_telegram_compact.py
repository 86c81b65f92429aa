"""Core's ``/compact`` from a Telegram chat under ``crab serve``: the chat's keyed session is
compacted, the chat gets the command's one line, and the next turn reads the shorter context."""

from __future__ import annotations

import re

ADA = 1111111


def test_slash_compact_compacts_the_chats_session(serve, bot_api):
    served = serve()
    for n, text in enumerate(("one", "two", "three"), start=1):
        bot_api.say(text, user=ADA)
        bot_api.wait_for(f"answer {n}", lambda n=n: len(bot_api.texts(ADA)) == n, served.proc)
    assert bot_api.texts(ADA)[-1] == "echo: three (3 user messages)"
    bot_api.say("/compact@crab_test_bot keep the numbers", user=ADA)
    bot_api.wait_for("the compaction", lambda: len(bot_api.texts(ADA)) == 4, served.proc)
    counts = re.match(r"compacted: (\d+) older messages became a summary, (\d+) recent ones", bot_api.texts(ADA)[-1])
    assert counts is not None and int(counts[1]) + int(counts[2]) == 6  # the 6 messages in context, split
    bot_api.say("four", user=ADA)
    bot_api.wait_for("the answer after it", lambda: len(bot_api.texts(ADA)) == 5, served.proc)
    assert served.stop() == 0, served.stderr
    after = bot_api.texts(ADA)[-1]
    assert after.startswith("echo: four (") and after != "echo: four (4 user messages)"
    assert "Traceback" not in served.stderr
