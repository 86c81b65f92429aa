"""crab's own API over real HTTP: sessions, SSE turns (the JSON of ``--output jsonl``), history,
permission questions for the asking client only, abort, disconnects, remote rules."""

from __future__ import annotations

import json
import signal
import threading
import time

import httpx
import httpx_sse

WAIT = 60.0


def new_session(client: httpx.Client, auth: dict[str, str], title: str = "") -> str:
    made = client.post("/v1/sessions", headers=auth, json={"title": title})
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def test_a_turn_streams_the_same_json_as_output_jsonl(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth(), "first")
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "hello"}) as r:
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
            events = sse(r)
    ran = shared.home.crab("run", "-m", "echo/echo", "--output", "jsonl", "hello")
    assert ran.returncode == 0, ran.stderr
    expected = [json.loads(line) for line in ran.stdout.splitlines()]
    assert [e["type"] for e in events] == [e["type"] for e in expected]

    def same(event: dict) -> dict:
        return {k: v for k, v in event.items() if k not in ("session_id", "turn_id")}

    assert [same(e) for e in events] == [same(e) for e in expected]
    assert events[-1]["type"] == "turn_end" and events[-1]["text"] == "echo: hello (1 user messages)"
    assert all(e["v"] == 1 for e in events)


def test_a_second_parser_sees_the_same_events_and_history_keeps_the_turns(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth(), "history")
        with httpx_sse.connect_sse(
            client, "POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "one"}
        ) as source:
            second = [json.loads(event.data) for event in source.iter_sse()]
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "two"}) as r:
            first = sse(r)
        assert [e["type"] for e in first] == [e["type"] for e in second]
        assert first[-1]["text"] == "echo: two (2 user messages)"
        got = client.get(f"/v1/sessions/{sid}", headers=shared.auth()).json()
        assert got["title"] == "history" and got["busy"] is False
        assert [(m["role"], m["content"]) for m in got["messages"] if m["role"] == "user"] == [
            ("user", "one"),
            ("user", "two"),
        ]
        listed = client.get("/v1/sessions", headers=shared.auth()).json()["sessions"]
        assert sid in [s["id"] for s in listed]


def test_sessions_belong_to_the_token_that_made_them(shared):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth(), "mine")
        other = shared.auth(shared.other)
        assert client.get(f"/v1/sessions/{sid}", headers=other).status_code == 404
        assert client.post(f"/v1/sessions/{sid}/messages", headers=other, json={"text": "hi"}).status_code == 404
        assert client.post(f"/v1/sessions/{sid}/abort", headers=other).status_code == 404
        assert sid not in [s["id"] for s in client.get("/v1/sessions", headers=other).json()["sessions"]]


def test_a_permission_question_goes_to_the_asking_client_and_its_answer_runs_the_tool(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth())
        with client.stream(
            "POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "jot milk"}
        ) as r:
            asked = sse(r, stop=lambda e: e["type"] == "permission_request")
            question = asked[-1]
            assert question["tool"] == "jot" and question["permission"] == "write" and "milk" in question["summary"]
            path = f"/v1/sessions/{sid}/permissions/{question['id']}"
            # another token cannot see or answer it
            assert client.post(path, headers=shared.auth(shared.other), json={"answer": "once"}).status_code == 404
            assert client.post(path, headers=shared.auth(), json={"answer": "maybe"}).status_code == 422
            assert client.post(path, headers=shared.auth(), json={"answer": "once"}).json() == {"answer": "once"}
            assert client.post(path, headers=shared.auth(), json={"answer": "once"}).status_code == 404
            rest = sse(r)
        kinds = [e["type"] for e in rest]
        assert kinds[0] == "permission_answer" and rest[0]["answer"] == "once"
        result = next(e for e in rest if e["type"] == "tool_result")
        assert result["content"] == "noted milk" and not result["is_error"]
        assert rest[-1]["text"] == "jot said: noted milk"


def test_a_denied_question_refuses_the_tool(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth())
        with client.stream(
            "POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "jot eggs"}
        ) as r:
            question = sse(r, stop=lambda e: e["type"] == "permission_request")[-1]
            client.post(
                f"/v1/sessions/{sid}/permissions/{question['id']}", headers=shared.auth(), json={"answer": "deny"}
            )
            rest = sse(r)
        result = next(e for e in rest if e["type"] == "tool_result")
        assert result["is_error"] and "noted" not in result["content"]


def test_abort_stops_the_running_turn_and_a_busy_session_says_409(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth())
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "slow"}) as r:
            sse(r, stop=lambda e: e["type"] == "text_delta")
            again = client.post(f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "more"})
            assert again.status_code == 409
            assert client.post(f"/v1/sessions/{sid}/abort", headers=shared.auth()).json() == {"aborted": True}
            rest = sse(r)
        assert rest[-1]["type"] == "turn_end" and rest[-1]["stop"] == "aborted"
        assert client.post(f"/v1/sessions/{sid}/abort", headers=shared.auth()).json() == {"aborted": False}


def wait_idle(client: httpx.Client, auth: dict[str, str], sid: str) -> dict:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = client.get(f"/v1/sessions/{sid}", headers=auth).json()
        if not got["busy"]:
            return dict(got)
        time.sleep(0.05)
    raise AssertionError("the turn never ended")


def test_a_client_that_leaves_aborts_its_turn(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth())
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "slow"}) as r:
            sse(r, stop=lambda e: e["type"] == "text_delta")
        # the connection is closed now: the turn is aborted well before its 10 s of parts
        started = time.monotonic()
        got = wait_idle(client, shared.auth(), sid)
        assert time.monotonic() - started < 9
        answer = [m for m in got["messages"] if m["role"] == "assistant"]
        assert "part 39." not in json.dumps(answer)


def test_with_on_disconnect_finish_the_turn_completes_into_the_session(serve, home, sse):
    token = home.token("laptop")
    home.configure('[plugins.http]\nport = 0\non_disconnect = "finish"\n')
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth)
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "wait for it"}) as r:
            sse(r, stop=lambda e: e["type"] == "turn_start")
        got = wait_idle(client, auth, sid)
        assert "waited: wait for it" in json.dumps(got["messages"])
    assert served.stop() == 0


def test_shell_input_is_refused_and_the_callers_token_never_reaches_the_model(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth())
        shell = client.post(f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "!ls"})
        assert shell.status_code == 403 and "!shell" in shell.json()["error"]["message"]
        text = f"my token is {shared.token} ok"
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": text}) as r:
            events = sse(r)
        history = client.get(f"/v1/sessions/{sid}", headers=shared.auth()).text
    assert shared.token not in json.dumps(events) and shared.token not in history
    assert all(shared.token not in json.dumps(r) for r in shared.home.requests())


def test_stop_lets_the_running_turn_finish_then_exits_0(serve, home, sse):
    token = home.token("laptop")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    seen: list[dict] = []
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth)

        def talk() -> None:
            with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "wait a bit"}) as r:
                seen.extend(sse(r))

        talker = threading.Thread(target=talk)
        talker.start()
        deadline = time.monotonic() + 30
        while not client.get(f"/v1/sessions/{sid}", headers=auth).json()["busy"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert served.stop() == 0
        talker.join(30)
    assert seen and seen[-1]["type"] == "turn_end" and seen[-1]["text"] == "waited: wait a bit"


def test_a_turn_past_turn_timeout_is_aborted(serve, home, sse):
    token = home.token("laptop")
    home.configure("[plugins.http]\nport = 0\nturn_timeout = 1\n")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth)
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "slow"}) as r:
            events = sse(r)
    assert events[-1]["type"] == "turn_end" and events[-1]["stop"] == "aborted"
    assert served.stop() == 0


def test_commands_answer_and_fork_moves_the_conversation_to_the_fork(shared, sse):
    with httpx.Client(base_url=shared.url, timeout=30) as client:
        sid = new_session(client, shared.auth(), "to fork")
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "hello"}) as r:
            sse(r)
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "/help"}) as r:
            helped = sse(r)
        assert [e["type"] for e in helped] == ["command_output"] and "/fork" in helped[0]["text"]
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": "/fork"}) as r:
            forked = sse(r)
        switch = forked[-1]
        assert switch["type"] == "session_switch" and switch["session_id"] != sid
        fork = client.get(f"/v1/sessions/{switch['session_id']}", headers=shared.auth()).json()
        assert fork["title"] == "to fork (fork)"
        assert [m["content"] for m in fork["messages"] if m["role"] == "user"] == ["hello"]
        with client.stream(
            "POST", f"/v1/sessions/{switch['session_id']}/messages", headers=shared.auth(), json={"text": "again"}
        ) as r:
            assert sse(r)[-1]["text"] == "echo: again (2 user messages)"
        listed = [s["id"] for s in client.get("/v1/sessions", headers=shared.auth()).json()["sessions"]]
        assert switch["session_id"] in listed


def test_with_a_persistent_store_sessions_outlive_the_server(serve, home, sse):
    """Skipped where crab-store-sqlite is not installed (this plugin's own CI venv)."""
    import importlib.util

    import pytest

    if importlib.util.find_spec("crab_store_sqlite") is None:
        pytest.skip("crab-store-sqlite is not installed: the restart test skips")
    home.env["CRAB_PLUGINS"] += ",store-sqlite"
    home.configure('[crab]\nstore = "sqlite"\n[plugins.http]\nport = 0\n')
    token = home.token("laptop")
    auth = {"Authorization": f"Bearer {token}"}
    served = serve()
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth, "kept")
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "one"}) as r:
            sse(r)
    assert served.stop() == 0
    again = serve()
    with httpx.Client(base_url=again.url, timeout=30) as client:
        assert sid in [s["id"] for s in client.get("/v1/sessions", headers=auth).json()["sessions"]]
        got = client.get(f"/v1/sessions/{sid}", headers=auth).json()
        assert got["title"] == "kept" and [m["content"] for m in got["messages"] if m["role"] == "user"] == ["one"]
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "two"}) as r:
            assert sse(r)[-1]["text"] == "echo: two (2 user messages)"
        assert (
            client.get(f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {home.token('phone')}"}).status_code
            == 404
        )
    assert again.stop() == 0


def test_sigterm_past_grace_ends_the_open_stream_cleanly_without_a_traceback(serve, home, sse):
    """Past ``grace_seconds`` the running turn is aborted: its stream ends with that turn_end
    (not a cut connection), the server exits 0, and no ASGI traceback reaches the log. The turn
    waits for a permission question nobody answers, so it outlasts any grace period."""
    token = home.token("laptop")
    home.configure("[serve]\ngrace_seconds = 0.5\n[plugins.http]\nport = 0\n")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth)
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "jot it"}) as r:
            sse(r, stop=lambda e: e["type"] == "permission_request")
            served.proc.send_signal(signal.SIGTERM)
            rest = sse(r)
    assert rest and rest[-1]["type"] == "turn_end" and rest[-1]["stop"] == "aborted", rest[-3:]
    assert served.proc.wait(WAIT) == 0  # one signal: the drain, then exit 0
    served.stop()
    log = served.log()
    assert "grace period over" in log
    assert "Traceback" not in log and "Exception in ASGI application" not in log and "CancelledError" not in log, log


def test_while_draining_new_sessions_and_messages_get_503_and_open_nothing(serve, home, sse):
    """The drain takes no more work: a new session (it could never run a turn here) and a new
    message are a 503, and neither leaves a session behind (each would end, reason "shutdown",
    when crab serve stops); reading a session still works."""
    token = home.token("laptop")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth, "running")
        idle = new_session(client, auth, "idle")
        # a turn waiting for a permission answer: the drain lasts until it is aborted
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "jot it"}) as r:
            sse(r, stop=lambda e: e["type"] == "permission_request")
            served.proc.send_signal(signal.SIGTERM)
            served.wait_for_line(r"stopping: waiting up to")
            made = client.post("/v1/sessions", headers=auth, json={"title": "late"})
            assert made.status_code == 503 and "stopping" in made.json()["error"]["message"]
            late = client.post(f"/v1/sessions/{idle}/messages", headers=auth, json={"text": "hi"})
            assert late.status_code == 503
            chat = {"messages": [{"role": "user", "content": "hi"}]}
            assert client.post("/v1/chat/completions", headers=auth, json=chat).status_code == 503
            keyed = client.post("/v1/chat/completions", headers=auth, json={**chat, "user": "c-late"})
            assert keyed.status_code == 503
            assert client.get(f"/v1/sessions/{sid}", headers=auth).json()["busy"] is True
            assert client.post(f"/v1/sessions/{sid}/abort", headers=auth).json() == {"aborted": True}
            assert sse(r)[-1]["type"] == "turn_end"
    assert served.proc.wait(WAIT) == 0
    served.stop()
    ended = sorted(line.split()[0] for line in (home.path / "ended").read_text().splitlines())
    assert ended == sorted([sid, idle])  # the two made before the drain, nothing else


def test_turns_are_shown_on_stderr_as_the_readme_says_and_stdout_stays_empty(serve, home, sse):
    """A server's log is stderr (journald and docker logs take it; stdout holds no answer anyone reads)."""
    from pathlib import Path

    token = home.token("laptop")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth)
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "hello"}) as r:
            sse(r)
    # The client has the answer once the stream ends; the server's renderer may show it a moment
    # later (a loaded machine): wait for the line, then stop.
    served.wait_for_line(r"echo: hello \(1 user messages\)")
    assert served.stop() == 0
    assert "echo: hello (1 user messages)" in served.log() and served.stdout == ""
    readme = (Path(__file__).parents[1] / "README.md").read_text()
    assert "`crab serve` shows every turn on stderr" in readme and "every turn on stdout" not in readme


def test_a_question_nobody_answers_in_time_is_refused_as_unanswered_not_as_the_users_no(home, serve, sse):
    # The client saw the question and never answered (away from the keyboard): the call is refused,
    # and the model is told nobody answered, not that the user refused it.
    home.configure("[plugins.http]\nport = 0\nrate_limit = 100000\nask_timeout = 1\n")
    token = home.token("laptop")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        sid = new_session(client, auth)
        with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "jot tea"}) as r:
            sse(r, stop=lambda e: e["type"] == "permission_request")
            rest = sse(r)
    answer = next(e for e in rest if e["type"] == "permission_answer")
    assert answer["answer"] == "deny"
    result = next(e for e in rest if e["type"] == "tool_result")
    assert result["is_error"] and result["content"].startswith(
        "Refused: jot needs write permission and nobody answered"
    ), result["content"]
