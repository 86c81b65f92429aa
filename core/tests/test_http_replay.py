"""crab.testing.http_replay: the replay server answers with what was scripted, over real HTTP."""

from __future__ import annotations

import http.client
import json
from pathlib import Path

import pytest
from crab.testing.http_replay import HttpReply, ReplayServer, find_secret, sse_bytes, sse_events

FIXTURE = "# header: where the format comes from\n\ndata: one\n\nevent: two\ndata: 2\n\n"


def post(server: ReplayServer, body: object) -> http.client.HTTPResponse:
    port = server.httpd.server_address[1]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("POST", "/v1/things", body=json.dumps(body), headers={"X-Test": "yes", "Connection": "close"})
    return connection.getresponse()


@pytest.fixture
def fixtures(tmp_path: Path) -> Path:
    (tmp_path / "two.sse").write_text(FIXTURE)
    return tmp_path


def test_fixture_files_drop_their_header_and_split_into_events(fixtures: Path) -> None:
    assert sse_events(fixtures / "two.sse") == [b"data: one\n\n", b"event: two\ndata: 2\n\n"]
    assert sse_bytes(fixtures / "two.sse") == b"data: one\n\nevent: two\ndata: 2\n\n"


def test_replies_come_in_script_order_and_requests_are_recorded(fixtures: Path) -> None:
    with ReplayServer(fixtures) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.url.endswith("/v1")
        server.script(server.error(429, {"error": "slow"}, {"retry-after": "1"}), server.sse("two.sse"))
        first = post(server, {"n": 1})
        assert (first.status, first.getheader("retry-after"), json.loads(first.read())) == (429, "1", {"error": "slow"})
        second = post(server, {"n": 2})
        assert second.status == 200
        assert second.getheader("content-type") == "text/event-stream"
        assert second.read() == b"data: one\n\nevent: two\ndata: 2\n\n"
        unscripted = post(server, {"n": 3})
        assert unscripted.status == 500
        assert [(r.path, r.body, r.headers["x-test"]) for r in server.requests] == [
            ("/v1/things", {"n": n}, "yes") for n in (1, 2, 3)
        ]
        assert server.requests[0].at <= server.requests[1].at


def test_a_cut_stream_ends_before_the_named_event(fixtures: Path) -> None:
    with ReplayServer(fixtures) as server:
        server.script(server.sse("two.sse", cut_after=1))
        response = post(server, {})
        with pytest.raises(http.client.IncompleteRead) as info:
            response.read()
        assert info.value.partial == b"data: one\n\n"


def test_a_reset_sends_no_response(fixtures: Path) -> None:
    with ReplayServer(fixtures) as server:
        server.script(server.reset(), HttpReply(204, body=b""))
        with pytest.raises((ConnectionError, http.client.RemoteDisconnected)):
            post(server, {})
        assert post(server, {}).status == 204


def test_provider_table_aims_at_the_server_with_tiny_delays() -> None:
    with ReplayServer() as server:
        table = server.provider_table("MY_KEY", idle_timeout=1.0)
        assert table["base_url"] == server.url
        assert (table["api_key_env"], table["retry_base_delay"], table["idle_timeout"]) == ("MY_KEY", 0.01, 1.0)
        with pytest.raises(ValueError, match="fixtures"):
            server.sse("any.sse")


def test_find_secret_names_every_place_but_skipped_files(tmp_path: Path) -> None:
    import subprocess

    (tmp_path / "auth.json").write_text("sk-secret-123")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "run.log").write_text("leaked sk-secret-123")
    result = subprocess.CompletedProcess([], 0, stdout="ok", stderr="sk-secret-123")
    assert find_secret(tmp_path, result, "sk-secret-123", skip=("auth.json",)) == [
        "stderr",
        str(tmp_path / "logs" / "run.log"),
    ]
