"""An OpenAI-API answer whose turn was aborted (``turn_timeout``, the drain past ``grace_seconds``,
an abort through crab's API) must not read as a whole answer. Red team: such a turn answered
``200`` with ``finish_reason: "stop"`` and the text cut where the abort came, so an OpenAI client
(the official SDK, an editor) took half an answer for a finished one. Now the whole answer is an
error saying so (503), and a stream ends with the error chunk a failed turn gets, never a
``finish_reason``; the session keeps what the turn said. The error says ``x-should-retry: false``:
the official SDK retries every 5xx twice by default, which would run the aborted turn again (a
``turn_timeout`` paid three times over, the prompt recorded three times in a keyed conversation);
so does the 502 of a failed turn, which the SDK ran three times too (red team, with the SDK)."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

MESSAGE = {"model": "echo/echo", "messages": [{"role": "user", "content": "slow answer"}]}


def test_a_turn_cut_by_turn_timeout_is_an_error_not_a_finished_answer(serve, home):
    token = home.token("laptop")
    home.configure("[plugins.http]\nport = 0\nrate_limit = 100000\nturn_timeout = 1.0\n")
    served = serve()
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=served.url, headers=auth, timeout=60) as client:
        whole = client.post("/v1/chat/completions", json=MESSAGE, headers={"X-Crab-Conversation": "a"})
        assert whole.status_code == 503, whole.text
        error = whole.json()["error"]
        assert "aborted" in error["message"] and error["type"] == "server_error", error
        with client.stream(
            "POST", "/v1/chat/completions", json={**MESSAGE, "stream": True}, headers={"X-Crab-Conversation": "b"}
        ) as streamed:
            data = [line[6:] for line in streamed.iter_lines() if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    chunks = [json.loads(d) for d in data[:-1]]
    assert "part 0. " in "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c.get("choices"))
    finishes = [c["choices"][0]["finish_reason"] for c in chunks if c.get("choices")]
    assert not any(finishes), finishes  # no chunk says the answer finished
    assert "aborted" in chunks[-1]["error"]["message"], chunks[-1]
    assert served.stop() == 0


def test_the_official_sdk_does_not_run_an_aborted_turn_again(serve, home):
    token = home.token("laptop")
    home.configure("[plugins.http]\nport = 0\nrate_limit = 100000\nturn_timeout = 1.0\n")
    served = serve()
    sdk = openai.OpenAI(base_url=served.url + "/v1", api_key=token, timeout=60)  # its default retries
    with pytest.raises(openai.APIStatusError) as raised:
        sdk.chat.completions.create(model="echo/echo", messages=MESSAGE["messages"], user="kept")
    assert raised.value.status_code == 503
    assert len(home.requests()) == 1, "the aborted turn ran again"
    assert served.stop() == 0


def test_the_official_sdk_does_not_run_a_failed_turn_again(serve, home):
    """A failed turn (502) is recorded like any other (its prompt, and no reply): run again by
    the SDK's retries it would be recorded three times, and the provider that failed it has had
    crab's own retries already."""
    token = home.token("laptop")
    served = serve()
    sdk = openai.OpenAI(base_url=served.url + "/v1", api_key=token, timeout=60)  # its default retries
    with pytest.raises(openai.APIStatusError) as raised:
        sdk.chat.completions.create(model="echo/echo", messages=[{"role": "user", "content": "fail now"}], user="k")
    assert raised.value.status_code == 502
    assert len(home.requests()) == 1, "the failed turn ran again"
    assert served.stop() == 0
