"""``crab serve telegram`` end to end against the fake Bot API: access, replies, robustness."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ADA = 1111111
BOB = 2222222
EVE = 6666666


def test_an_allowed_user_gets_the_answer_and_a_stranger_gets_nothing(serve, bot_api):
    served = serve()
    bot_api.say("hi there", user=EVE)
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["echo: hello (1 user messages)"]
    assert bot_api.sent(EVE) == []
    assert bot_api.sent(EVE, "sendChatAction") == []
    assert "telegram: ignored a message from user 6666666 (@ada) in chat 6666666: not in allow_from" in served.stderr
    assert bot_api.sent(ADA, "sendChatAction")[0].params["action"] == "typing"


def test_an_empty_allowlist_denies_everyone(serve, bot_api, tg_env):
    home = Path(tg_env["CRAB_HOME"])
    (home / "config.toml").write_text(f'[plugins.telegram]\nbase_url = "{bot_api.url}"\npoll_timeout = 1\n')
    served = serve()
    first = bot_api.say("hello", user=ADA)
    bot_api.say("me too", user=BOB)
    # the poll after these confirms them: both were seen and dropped
    bot_api.wait_for(
        "the updates to be confirmed",
        lambda: any((c.params.get("offset") or 0) > first + 1 for c in bot_api.sent(method="getUpdates")),
        served.proc,
    )
    assert served.stop() == 0, served.stderr
    assert bot_api.sent() == []
    assert "allow_from is empty, so nobody can use this bot" in served.stderr
    assert served.stderr.count("not in allow_from") == 2


def test_a_long_reply_is_split_under_the_limit_on_block_boundaries(serve, bot_api):
    served = serve()
    bot_api.say("long please", user=ADA)
    bot_api.wait_for("the whole answer", lambda: any("Tail 9" in t for t in bot_api.texts(ADA)), served.proc)
    assert served.stop() == 0, served.stderr
    pieces = bot_api.sent(ADA)
    assert len(pieces) >= 3
    for call in pieces:
        assert len(call.params["text"].encode("utf-16-le")) // 2 <= 4096
        assert call.params["parse_mode"] == "HTML"
        # a code block is never cut open: each piece has as many <pre> as </pre>
        assert call.params["text"].count("<pre") == call.params["text"].count("</pre>")
    joined = "\n".join(c.params["text"] for c in pieces)
    assert all(f"Paragraph {i}:" in joined for i in range(30))
    assert all(f"print({i})" in joined for i in range(400))


def test_429_retry_after_is_honoured(serve, bot_api):
    bot_api.fail(
        "sendMessage",
        {
            "ok": False,
            "error_code": 429,
            "description": "Too Many Requests: retry after 1",
            "parameters": {"retry_after": 1},
        },
    )
    served = serve()
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer after the 429", lambda: len(bot_api.sent(ADA)) == 2, served.proc)
    assert served.stop() == 0, served.stderr
    refused, accepted = bot_api.sent(ADA)
    assert refused.params["text"] == accepted.params["text"] == "echo: hello (1 user messages)"
    assert accepted.time - refused.time >= 0.9  # waited the second Telegram asked for


def test_a_restart_resumes_from_the_saved_offset(serve, bot_api):
    served = serve()
    first = bot_api.say("one", user=ADA)
    bot_api.wait_for("the first answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    second = bot_api.say("two", user=ADA)
    polls_before = len(bot_api.sent(method="getUpdates"))
    again = serve()
    bot_api.wait_for("the second answer", lambda: len(bot_api.texts(ADA)) == 2, again.proc)
    assert again.stop() == 0, again.stderr
    assert bot_api.sent(method="getUpdates")[polls_before].params["offset"] == first + 1 == second
    # nothing was answered twice (only core's memory store here: the new process starts a new session)
    assert bot_api.texts(ADA) == ["echo: one (1 user messages)", "echo: two (1 user messages)"]


def test_a_message_taken_before_a_crash_is_answered_after_the_restart(serve, bot_api):
    served = serve()
    bot_api.say("wait for me", user=ADA)
    bot_api.wait_for("the turn to start", lambda: bot_api.sent(ADA, "sendChatAction"), served.proc)
    served.proc.kill()  # no drain: the update was confirmed to Telegram but never answered
    served.proc.communicate()
    again = serve()
    bot_api.wait_for("the answer after the restart", lambda: bot_api.texts(ADA), again.proc)
    assert again.stop() == 0, again.stderr
    assert bot_api.texts(ADA) == ["waited: wait for me"]


def test_sigterm_lets_the_answer_in_hand_go_out(serve, bot_api):
    served = serve()
    bot_api.say("wait a bit", user=ADA)
    bot_api.wait_for("the turn to start", lambda: bot_api.sent(ADA, "sendChatAction"), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["waited: wait a bit"]


def test_two_chats_at_once_stay_apart(serve, bot_api):
    served = serve()
    bot_api.say("wait A", user=ADA)
    bot_api.say("wait B", user=BOB)
    bot_api.say("second from A", user=ADA)
    bot_api.say("@crab_test_bot in a topic", user=BOB, chat=-100777, thread=5)  # groups: when mentioned
    bot_api.wait_for(
        "every answer",
        lambda: len(bot_api.texts(ADA)) == 2 and bot_api.texts(BOB) and bot_api.texts(-100777),
        served.proc,
    )
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["waited: wait A", "echo: second from A (2 user messages)"]
    assert bot_api.texts(BOB) == ["waited: wait B"]
    assert bot_api.texts(-100777) == ["echo: in a topic (1 user messages)"]
    assert bot_api.sent(-100777)[0].params["message_thread_id"] == 5
    # the two slow turns ran side by side: B's turn began before A's first answer went out
    a_answered = min(c.time for c in bot_api.calls if c.method != "sendChatAction" and c.params.get("chat_id") == ADA)
    assert bot_api.sent(BOB, "sendChatAction")[0].time < a_answered


def test_the_token_appears_nowhere(serve, bot_api, bot_token, tg_env):
    served = serve()
    bot_api.say(f"is {bot_token} your token?", user=ADA)
    bot_api.say("long", user=ADA)
    bot_api.say("hello", user=EVE)
    bot_api.wait_for("the answers", lambda: len(bot_api.texts(ADA)) >= 3, served.proc)
    assert served.stop() == 0
    assert bot_token not in served.stdout + served.stderr
    home = Path(tg_env["CRAB_HOME"])
    files = [p for p in home.rglob("*") if p.is_file()]
    assert any(p.name.startswith("state-") for p in files)
    assert (home / "requests.jsonl").exists()  # what the model was sent
    for path in files:
        assert bot_token.encode() not in path.read_bytes(), path
    sent = "".join(str(c.params) for c in bot_api.calls)
    assert bot_token not in sent
    assert "[redacted]" in bot_api.texts(ADA)[0]


def test_no_token_exits_2_with_one_line(tg_env, tmp_path):
    env = dict(tg_env)
    del env["TELEGRAM_BOT_TOKEN"]
    result = subprocess.run(
        [sys.executable, "-m", "crab", "serve", "telegram", "-m", "echo/echo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("crab: telegram: no bot token: set TELEGRAM_BOT_TOKEN")


def test_a_refused_token_stops_the_channel_with_a_clear_line(tg_env, tmp_path):
    env = dict(tg_env, TELEGRAM_BOT_TOKEN="1234:not-the-right-token-at-all")
    result = subprocess.run(
        [sys.executable, "-m", "crab", "serve", "telegram", "-m", "echo/echo"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "channel telegram stopped: telegram: the Bot API refused the bot token" in result.stderr
    assert "not-the-right-token" not in result.stderr


def test_a_project_cannot_open_the_bot_to_strangers_or_move_the_token(serve, bot_api, tmp_path):
    project = tmp_path / "work" / ".crab"
    project.mkdir(parents=True)
    (project / "config.toml").write_text(
        '[plugins.telegram]\nallow_from = ["*"]\nbase_url = "http://127.0.0.1:9"\nallow_shell = true\n'
        'token_env = "OTHER_TOKEN"\n'
    )
    served = serve()
    bot_api.say("let me in", user=EVE)
    bot_api.say("!id", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.sent(EVE) == []
    assert bot_api.texts(ADA)[0].startswith("!shell input is refused")
    for key in ("allow_from", "base_url", "allow_shell", "token_env"):
        assert f"plugins.telegram.{key}" in served.stderr  # named as ignored


def test_crab_telegram_run_is_crab_serve_telegram(serve, bot_api):
    served = serve(command=("telegram", "run"))
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["echo: hello (1 user messages)"]


def test_server_errors_are_retried_and_polling_goes_on(serve, bot_api):
    bad_gateway = {"ok": False, "error_code": 502, "description": "Bad Gateway"}
    served = serve()
    bot_api.fail("getUpdates", bad_gateway, times=2)
    bot_api.fail("sendMessage", bad_gateway, times=1)
    bot_api.say("still there?", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["echo: still there? (1 user messages)"]
    assert len(bot_api.sent(ADA)) == 2  # the 502, then the answer


NGINX_502 = (
    "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n"
    "<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n"
    + "<!-- a padding to disable MSIE and Chrome friendly error page -->\r\n" * 6
    + "</body>\r\n</html>\r\n"
)


def test_an_html_502_from_the_front_is_one_short_line_per_failed_poll(serve, bot_api):
    served = serve()
    bot_api.fail("getUpdates", {"error_code": 502, "html": NGINX_502}, times=2)
    bot_api.wait_for("both failures to be served", lambda: not bot_api.failures["getUpdates"], served.proc)
    polls = len(bot_api.sent(method="getUpdates"))
    # the poll after the second failure: its warning was printed before it
    bot_api.wait_for("a poll after them", lambda: len(bot_api.sent(method="getUpdates")) > polls, served.proc)
    bot_api.say("still there?", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_api.texts(ADA) == ["echo: still there? (1 user messages)"]
    failed = [line for line in served.stderr.splitlines() if "telegram: getUpdates:" in line]
    assert len(failed) == 2, served.stderr
    for line in failed:
        assert "Bad Gateway (502)" in line and "was not the Bot API's JSON" in line, line
        assert "polling again in" in line and len(line) < 400, line
    assert "<html" not in served.stderr and "nginx" not in served.stderr and "padding" not in served.stderr


def test_the_token_can_come_from_the_auth_file(serve, bot_api, tg_env, bot_token):
    import json

    env = dict(tg_env)
    del env["TELEGRAM_BOT_TOKEN"]
    (Path(env["CRAB_HOME"]) / "auth.json").write_text(json.dumps({"telegram": bot_token}))
    served = serve(env=env)
    bot_api.say("hello", user=ADA)
    bot_api.wait_for("the answer", lambda: bot_api.texts(ADA), served.proc)
    assert served.stop() == 0, served.stderr
    assert bot_token not in served.stderr


def test_doctor_checks_the_channels_serve_would_start(tg_env, tmp_path):
    # [serve] channels = ["telegram"] with no token: doctor says so, as `crab serve` would.
    home = Path(tg_env["CRAB_HOME"])
    (home / "config.toml").write_text('[serve]\nchannels = ["telegram"]\n')
    env = dict(tg_env)
    del env["TELEGRAM_BOT_TOKEN"]

    def doctor(environ: dict[str, str]) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "crab", "doctor", "-m", "echo/echo"],
            env=environ,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return [line for line in done.stdout.splitlines() if line[6:].startswith("serve:")]

    [missing] = doctor(env)
    assert missing.startswith("FAIL  serve: telegram: no bot token: set TELEGRAM_BOT_TOKEN"), missing
    assert doctor(tg_env) == ["ok    serve: telegram ready to start"]
