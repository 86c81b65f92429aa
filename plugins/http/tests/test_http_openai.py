"""The OpenAI-compatible API driven by the official ``openai`` SDK (``base_url`` at crab), and
50 conversations at once."""

from __future__ import annotations

import asyncio
import json

import httpx
import openai
import pytest


def client_for(shared, token: str | None = None) -> openai.OpenAI:
    return openai.OpenAI(base_url=shared.url + "/v1", api_key=token or shared.token, max_retries=0, timeout=30)


def test_models_lists_the_agents_model(shared):
    models = client_for(shared).models.list()
    assert [m.id for m in models.data] == ["echo/echo"]


def test_a_completion_without_streaming(shared):
    done = client_for(shared).chat.completions.create(
        model="echo/echo", messages=[{"role": "user", "content": "hello"}], user="c-plain"
    )
    assert done.choices[0].message.content == "echo: hello (1 user messages)"
    assert done.choices[0].finish_reason == "stop"
    assert done.usage is not None


def test_the_user_field_keeps_one_crab_session_per_conversation(shared):
    sdk = client_for(shared)
    for n, word in enumerate(["one", "two", "three"], 1):
        done = sdk.chat.completions.create(model="any", messages=[{"role": "user", "content": word}], user="c-keep")
        assert done.choices[0].message.content == f"echo: {word} ({n} user messages)"
    other = sdk.chat.completions.create(
        model="any", messages=[{"role": "user", "content": "x"}], extra_headers={"X-Crab-Conversation": "c-other"}
    )
    assert other.choices[0].message.content == "echo: x (1 user messages)"


def test_without_a_conversation_each_request_stands_alone_with_its_history_as_context(shared):
    sdk = client_for(shared)
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "second"},
    ]
    done = sdk.chat.completions.create(model="any", messages=messages)
    text = done.choices[0].message.content or ""
    assert "[user] first" in text and "[assistant] ok" in text and "second (1 user messages)" in text


def test_streaming_with_a_tool_the_agent_runs(shared):
    stream = client_for(shared).chat.completions.create(
        model="echo/echo", messages=[{"role": "user", "content": "peek the sky"}], user="c-stream", stream=True
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "peek said: saw the sky"
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert len({c.id for c in chunks}) == 1


def test_a_write_tool_is_refused_in_an_openai_conversation(shared):
    """OpenAI clients cannot answer a permission question: the gate refuses, nothing is written."""
    done = client_for(shared).chat.completions.create(
        model="x", messages=[{"role": "user", "content": "jot secret plans"}], user="c-jot"
    )
    text = done.choices[0].message.content or ""
    assert text.startswith("Writing it down.\n\njot said:") and "noted" not in text


def test_bad_requests_are_openai_errors(shared):
    sdk = client_for(shared)
    with pytest.raises(openai.AuthenticationError):
        client_for(shared, "crab_wrong").models.list()
    with pytest.raises(openai.UnprocessableEntityError, match="own tools"):
        sdk.chat.completions.create(
            model="x",
            messages=[{"role": "user", "content": "hi"}],
            tools=[{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}],
        )
    with pytest.raises(openai.UnprocessableEntityError, match="last message"):
        sdk.chat.completions.create(model="x", messages=[{"role": "assistant", "content": "hi"}])
    with httpx.Client(base_url=shared.url, timeout=30) as raw:
        shell = raw.post(
            "/v1/chat/completions", headers=shared.auth(), json={"messages": [{"role": "user", "content": "!id"}]}
        )
        assert shell.status_code == 403


def test_fifty_conversations_at_once_each_get_their_own_answers(shared, sse):
    async def converse(client: httpx.AsyncClient, n: int) -> list[str]:
        sdk = openai.AsyncOpenAI(base_url=shared.url + "/v1", api_key=shared.token, http_client=client, max_retries=0)
        answers = []
        for word in ("wait", "again"):
            done = await sdk.chat.completions.create(
                model="x", messages=[{"role": "user", "content": f"{word} {n}"}], user=f"many-{n}"
            )
            answers.append(done.choices[0].message.content or "")
        return answers

    async def crab_api(client: httpx.AsyncClient, n: int) -> str:
        made = await client.post("/v1/sessions", headers=shared.auth(), json={"title": f"s{n}"})
        sid = made.json()["id"]
        async with client.stream(
            "POST", f"/v1/sessions/{sid}/messages", headers=shared.auth(), json={"text": f"wait api {n}"}
        ) as r:
            text = ""
            async for line in r.aiter_lines():
                if line.startswith("data: ") and '"turn_end"' in line:
                    text = line
        return text

    async def main() -> tuple[list[list[str]], list[str]]:
        limits = httpx.Limits(max_connections=200)
        async with httpx.AsyncClient(base_url=shared.url, timeout=60, limits=limits) as client:
            chats = asyncio.gather(*(converse(client, n) for n in range(25)))
            apis = asyncio.gather(*(crab_api(client, n) for n in range(25)))
            return await chats, await apis

    chats, apis = asyncio.run(main())
    for n, answers in enumerate(chats):
        assert answers == [f"waited: wait {n}", f"echo: again {n} (2 user messages)"]
    for n, line in enumerate(apis):
        assert f'"text": "waited: wait api {n}"' in line


def test_a_client_that_gives_up_on_a_whole_answer_aborts_its_turn(shared):
    body = {"model": "x", "messages": [{"role": "user", "content": "slow"}], "user": "c-leave"}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(shared.url + "/v1/chat/completions", headers=shared.auth(), json=body, timeout=1.0)
    again = {**body, "messages": [{"role": "user", "content": "hello"}]}
    for _ in range(600):
        answer = httpx.post(shared.url + "/v1/chat/completions", headers=shared.auth(), json=again, timeout=30)
        if answer.status_code != 409:
            break
    assert answer.json()["choices"][0]["message"]["content"] == "echo: hello (2 user messages)"
    # the aborted reply is kept in the session but never sent to the model again
    last = shared.home.requests()[-1]
    assert not any("part 39." in json.dumps(m) for m in last)


def test_a_command_streams_as_one_completion(shared):
    chunks = list(
        client_for(shared).chat.completions.create(
            model="x", messages=[{"role": "user", "content": "/help"}], user="c-help", stream=True
        )
    )
    assert "/fork" in "".join(c.choices[0].delta.content or "" for c in chunks)
    assert chunks[-1].choices[0].finish_reason == "stop" and len({c.id for c in chunks}) == 1


def test_a_request_without_a_conversation_ends_its_session_after_its_answer(serve, home):
    # Nobody can address a one-off request's session again: crab held it for the life of the
    # process (one more per request) and its background jobs ran on until crab serve exited.
    import time

    token = home.token("laptop")
    served = serve()
    sdk = client_for(type("S", (), {"url": served.url, "token": token})())
    kept = sdk.chat.completions.create(model="any", messages=[{"role": "user", "content": "hi"}], user="c-kept")
    for word in ("one", "two"):
        done = sdk.chat.completions.create(model="any", messages=[{"role": "user", "content": word}])
        assert done.choices[0].message.content == f"echo: {word} (1 user messages)"
    ended = home.path / "ended"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not ended.exists() or len(ended.read_text().split("\n")) < 3):
        time.sleep(0.05)
    lines = ended.read_text().splitlines() if ended.exists() else []
    assert len(lines) == 2 and all(line.endswith(" end") for line in lines), lines
    assert kept.choices[0].message.content.startswith("echo: hi")
    assert served.stop() == 0
    reasons = [line.split()[1] for line in ended.read_text().splitlines()]
    assert reasons == ["end", "end", "shutdown"]  # the kept conversation ends only with crab


def test_streamed_and_whole_answers_say_the_same(shared):
    """Both are every model call's text, a remark before a tool call too, calls parted by a blank
    line (streamed, the remark went out; whole, only the final text came back)."""
    sdk = client_for(shared)
    message = [{"role": "user", "content": "jot the same plans"}]
    whole = sdk.chat.completions.create(model="x", messages=message, user="c-same-whole")
    chunks = list(sdk.chat.completions.create(model="x", messages=message, user="c-same-stream", stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert whole.choices[0].message.content == streamed
    assert streamed.startswith("Writing it down.\n\njot said: ") and "noted" not in streamed


def test_a_refused_request_opens_no_session(serve, home):
    """``!shell`` input is refused before a conversation is opened: no session kept for the life
    of the process (each would end, reason "shutdown", when crab serve stops)."""
    token = home.token("laptop")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, timeout=30) as client:
        shell = {"messages": [{"role": "user", "content": "!ls"}]}
        assert client.post("/v1/chat/completions", headers=auth, json=shell).status_code == 403
        assert client.post("/v1/chat/completions", headers=auth, json={**shell, "user": "c-shell"}).status_code == 403
        history = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, *shell["messages"]]
        assert client.post("/v1/chat/completions", headers=auth, json={"messages": history}).status_code == 403
    assert served.stop() == 0
    ended = home.path / "ended"
    assert not ended.exists(), ended.read_text()
    assert home.requests() == []


def test_a_token_used_as_the_conversation_key_is_never_stored(serve, home):
    """The key is stored as a digest: ``crab sessions list`` (the session's title), its meta and
    every file under CRAB_HOME hold no trace of it, and the conversation still goes on.
    Skipped where crab-store-sqlite is not installed (this plugin's own CI venv)."""
    import importlib.util

    if importlib.util.find_spec("crab_store_sqlite") is None:
        pytest.skip("crab-store-sqlite is not installed: the stored-address test skips")
    home.env["CRAB_PLUGINS"] += ",store-sqlite"
    home.configure('[crab]\nstore = "sqlite"\n[plugins.http]\nport = 0\n')
    token = home.token("laptop")
    served = serve()
    sdk = openai.OpenAI(base_url=served.url + "/v1", api_key=token, max_retries=0, timeout=30)
    for n, word in enumerate(["one", "two"], 1):
        done = sdk.chat.completions.create(
            model="x", messages=[{"role": "user", "content": word}], extra_headers={"X-Crab-Conversation": token}
        )
        assert done.choices[0].message.content == f"echo: {word} ({n} user messages)"
    assert served.stop() == 0
    listed = home.crab("sessions", "list")
    assert listed.returncode == 0 and "http laptop/openai:" in listed.stdout, listed.stdout + listed.stderr
    sid = listed.stdout.split()[0]
    shown = home.crab("sessions", "show", sid, "--json")
    assert shown.returncode == 0 and '"crab.address": "laptop/openai:' in shown.stdout, shown.stderr
    for output in (listed.stdout, shown.stdout):
        assert token not in output and token[5:] not in output
    assert "http laptop/openai:#" in listed.stdout  # <token name>/openai:#<digest>
    for path in home.path.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert token.encode() not in data and token[5:].encode() not in data, path
