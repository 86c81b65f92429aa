"""The model's plan (``crab.events.PlanEvent``) in a chat, through the fake Bot API: one message
(sendMessage) edited in place (editMessageText with its ``message_id``) at most once per
``edit_interval``, its last state shown before the answer, and a new one for the next message."""

from __future__ import annotations

import itertools

import crab
from crab_telegram.plan import MAX_STEPS, plan_text

ADA = 1111111
INTERVAL = 1.0
"""``[plugins.telegram] edit_interval``'s default, which these tests run with."""


def plan_calls(bot_api, message_id):
    """sendMessage and then every editMessageText of the message ``message_id``, in order."""
    with bot_api.lock:
        return [
            c for c in bot_api.calls if c.method in ("sendMessage", "editMessageText") and c.message_id == message_id
        ]


def plan_messages(bot_api):
    return [c for c in bot_api.sent(ADA) if str(c.params.get("text")).startswith("Plan (")]


def test_the_plan_is_one_message_edited_in_place_and_rate_bounded(serve, bot_api):
    served = serve()
    bot_api.say("plan read the code, write the fix, run the tests", user=ADA)
    bot_api.wait_for("the answer", lambda: "jot said: planned 3 steps" in bot_api.texts(ADA), served.proc)
    (sent,) = plan_messages(bot_api)  # seven plan changes, one message
    assert sent.params["text"] == "Plan (0/3 done):\n⬜ read the code\n⬜ write the fix\n⬜ run the tests"
    assert "parse_mode" not in sent.params  # the steps are the model's words: shown as they are
    calls = plan_calls(bot_api, sent.message_id)
    edits = calls[1:]
    assert edits and all(c.method == "editMessageText" and c.params["chat_id"] == ADA for c in edits)
    # Six changes came within about 0.3 s: not each was sent, only the latest once the interval was over.
    assert len(edits) < 6
    gaps = [later.time - earlier.time for earlier, later in itertools.pairwise(calls)]
    assert all(gap >= INTERVAL - 0.05 for gap in gaps), gaps
    final = "Plan (3/3 done):\n✅ read the code\n✅ write the fix\n✅ run the tests"
    assert edits[-1].params["text"] == final
    answer = next(c for c in bot_api.sent(ADA) if c.params.get("text") == "jot said: planned 3 steps")
    assert answer.time > edits[-1].time  # the finished plan shows before the answer
    assert bot_api.texts(ADA) == [final, "jot said: planned 3 steps"]

    # The user's next message: its plan is a message of its own, below it; the first stays as it was.
    bot_api.say("plan deploy", user=ADA)
    bot_api.wait_for("the second answer", lambda: "jot said: planned 1 steps" in bot_api.texts(ADA), served.proc)
    first, second = plan_messages(bot_api)
    assert first.message_id == sent.message_id and second.message_id != sent.message_id
    second_final = "Plan (1/1 done):\n✅ deploy"
    assert bot_api.texts(ADA) == [final, "jot said: planned 3 steps", second_final, "jot said: planned 1 steps"]
    assert served.stop() == 0, served.stderr


def test_a_turn_without_a_plan_sends_no_plan_message(serve, bot_api):
    served = serve()
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert plan_messages(bot_api) == [] and bot_api.sent(method="editMessageText") == []


def test_the_checklist_text_stays_short_whatever_the_plan_holds():
    assert plan_text(()) == "Plan cleared."
    long_step = crab.events.PlanItem("x" * 500 + "\nsecond line", "in_progress")
    many = (long_step, *(crab.events.PlanItem(f"step {i}") for i in range(MAX_STEPS + 10)))
    text = plan_text(many)
    lines = text.splitlines()
    assert lines[0] == f"Plan (0/{len(many)} done):"
    assert lines[1].startswith("▶️ x") and lines[1].endswith("…") and len(lines[1]) < 210
    assert "second line" not in text
    assert lines[-1] == "… and 11 more steps" and len(lines) == MAX_STEPS + 2
    assert len(text.encode("utf-16-le")) // 2 < 4096


def test_a_plan_of_long_steps_still_fits_one_message():
    # 50 steps of 200 characters (emoji count twice in Telegram's UTF-16 units) would be refused
    # as too long, and the plan never shown.
    for step in ("y" * 300, "🦀" * 300):
        items = tuple(crab.events.PlanItem(f"{i} {step}", "done" if i < 3 else "pending") for i in range(MAX_STEPS))
        text = plan_text(items)
        lines = text.splitlines()
        assert len(text.encode("utf-16-le")) // 2 <= 4096
        assert lines[0] == f"Plan (3/{MAX_STEPS} done):" and lines[1].startswith("✅ 0 ")
        shown = len(lines) - 2
        assert 5 < shown < MAX_STEPS and lines[-1] == f"… and {MAX_STEPS - shown} more steps"
