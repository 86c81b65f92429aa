"""What a chat can do: commands, `!shell`, permission buttons, formatting fallback, streaming,
delivery from another plugin, pairing."""

from __future__ import annotations

import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

ADA = 1111111
EVE = 6666666


def question(bot_api, chat):
    """The permission question sent to ``chat`` and its buttons' callback data."""
    asked = [c for c in bot_api.sent(chat) if c.params.get("reply_markup")]
    if not asked:
        return None
    call = asked[-1]
    buttons = call.params["reply_markup"]["inline_keyboard"][0]
    return call, {b["text"]: b["callback_data"] for b in buttons}


def test_telegram_commands_are_crab_commands_and_shell_is_refused(serve, bot_api):
    served = serve()
    bot_api.say("/help@crab_test_bot", user=ADA)
    bot_api.say("!cat /etc/passwd", user=ADA)
    bot_api.say("/nosuch", user=ADA)
    bot_api.wait_for("three answers", lambda: len(bot_api.texts(ADA)) == 3, served.proc)
    assert served.stop() == 0, served.stderr
    helped, shell, unknown = bot_api.texts(ADA)
    assert "/help" in helped
    assert shell.startswith("!shell input is refused from Telegram")
    assert "unknown command /nosuch" in unknown
    menu = bot_api.sent(method="setMyCommands")[0].params["commands"]
    assert {"help"} <= {c["command"] for c in menu}


def test_a_write_tool_asks_with_buttons_and_only_the_allowed_user_can_answer(serve, bot_api):
    served = serve()
    bot_api.say("jot buy milk", user=ADA)
    call, buttons = bot_api.wait_for("the question", lambda: question(bot_api, ADA), served.proc)
    assert "jot" in call.params["text"]
    assert set(buttons) == {"Allow once", "Always in this chat", "Deny"}
    bot_api.press(buttons["Allow once"], user=EVE, chat=EVE)  # a stranger's press does nothing
    time.sleep(0.3)
    assert not any("jot said" in t for t in bot_api.texts(ADA))
    bot_api.press(buttons["Allow once"], user=ADA, chat=ADA)
    bot_api.wait_for(
        "the answer", lambda: any("jot said: noted buy milk" in t for t in bot_api.texts(ADA)), served.proc
    )
    assert served.stop() == 0, served.stderr
    assert "ignored a button press from user 6666666" in served.stderr
    assert any(t.endswith("→ allowed once") for t in bot_api.texts(ADA))
    pressed = bot_api.sent(method="answerCallbackQuery")
    assert [c.params["text"] for c in pressed] == ["allowed once"]


def test_a_denied_button_refuses_the_tool(serve, bot_api):
    served = serve()
    bot_api.say("jot secret plan", user=ADA)
    _, buttons = bot_api.wait_for("the question", lambda: question(bot_api, ADA), served.proc)
    bot_api.press(buttons["Deny"], user=ADA, chat=ADA)
    bot_api.wait_for("the answer", lambda: any("jot said:" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr
    assert any("refused" in t for t in bot_api.texts(ADA) if "jot said" in t)


def test_permission_prompts_refuse_asks_nobody(serve, bot_api, tg_env):
    config = Path(tg_env["CRAB_HOME"]) / "config.toml"
    config.write_text(config.read_text() + 'permission_prompts = "refuse"\n')
    served = serve()
    bot_api.say("jot nothing", user=ADA)
    bot_api.wait_for("the answer", lambda: any("jot said:" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr
    assert question(bot_api, ADA) is None
    assert any("cannot ask the user" in t for t in bot_api.texts(ADA))


def test_a_parse_error_falls_back_to_plain_text(serve, bot_api):
    bot_api.refuse_html_containing = "<b>BREAK</b>"
    served = serve()
    bot_api.say("broken formatting", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    attempts = bot_api.sent(ADA)
    assert attempts[0].params["parse_mode"] == "HTML"
    assert bot_api.texts(ADA) == ["**BREAK** this"]  # the plain Markdown, as written
    assert "parse_mode" not in attempts[-1].params


def test_a_long_answer_streams_by_editing_one_message_at_most_once_a_second(serve, bot_api):
    served = serve()
    bot_api.say("slow story", user=ADA)
    bot_api.wait_for("the final text", lambda: "part 4." in "".join(bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr
    assert len(bot_api.texts(ADA)) == 1  # one message, edited
    assert bot_api.texts(ADA)[0].strip() == "part 0. part 1. part 2. part 3. part 4."
    edits = bot_api.sent(ADA, "editMessageText")
    assert edits
    writes = sorted([c.time for c in bot_api.sent(ADA)] + [c.time for c in edits])
    assert all(later - earlier >= 0.9 for earlier, later in pairwise(writes))


def test_pairing_adds_the_sender_of_the_code_to_allow_from(tg_env, bot_api, tmp_path, bot_token):
    config = Path(tg_env["CRAB_HOME"]) / "config.toml"
    config.write_text(f'# my settings\n[plugins.telegram]\nbase_url = "{bot_api.url}"\npoll_timeout = 1\n')
    proc = subprocess.Popen(
        [sys.executable, "-m", "crab", "telegram", "pair", "--minutes", "1"],
        env=tg_env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    lines = []
    while not any("/pair " in line for line in lines):
        lines.append(proc.stdout.readline())
    code = next(line for line in lines if "/pair " in line).split()[-1]
    bot_api.say("/pair 000000" if code != "000000" else "/pair 111111", user=EVE)
    bot_api.say(f"hello before pairing, my bot token is {bot_token}", user=ADA)  # kept pending meanwhile
    bot_api.say(f"/pair {code}", user=ADA)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "paired user 1111111 (@ada)" in out
    text = config.read_text()
    assert "# my settings" in text
    assert 'allow_from = ["1111111"]' in text
    assert bot_api.texts(ADA) == ["Paired: crab will answer you here."]
    assert bot_api.sent(EVE) == []
    stored = "".join(p.read_text() for p in (Path(tg_env["CRAB_HOME"]) / "telegram").glob("state-*.json"))
    assert "hello before pairing" in stored and bot_token not in stored


def test_another_plugin_delivers_to_an_allowed_chat_only(serve, bot_api, tg_env, tmp_path):
    import json

    report = tmp_path / "courier.json"
    env = dict(tg_env, TG_TEST_COURIER=str(report))
    served = serve("--set", "serve.channels=[]", env=env, command=("serve", "telegram", "courier"))
    bot_api.wait_for("the courier's report", report.exists, served.proc)
    time.sleep(0.1)
    assert served.stop() == 0, served.stderr
    ok, stranger, bad = json.loads(report.read_text())
    assert ok == "ok"
    assert stranger == "telegram: chat 6666666 is not in allow_from"
    assert bad == "telegram: 'x' is not a chat id"
    delivered = bot_api.sent(ADA)[0].params
    assert (delivered["text"], delivered["parse_mode"]) == ("standup in <b>5</b> minutes", "HTML")
    assert "reply_parameters" not in delivered  # a delivery answers no one
    assert bot_api.sent(EVE) == []
