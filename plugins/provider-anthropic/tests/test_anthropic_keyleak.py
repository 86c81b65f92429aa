"""End to end: ``crab run`` as a subprocess against the local fake server; the key must appear
in no byte the run printed or stored (stdout, stderr, every file under ``CRAB_HOME``).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from crab.testing import CRAB, find_secret, run_crab

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment"),
]

STORE = "jsonl" if importlib.util.find_spec("crab_tape_jsonl") else "memory"


def write_config(home: Path, server_url: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[plugins.provider-anthropic]\n"
        f'base_url = "{server_url}"\n'
        'api_key_env = "CRAB_TEST_ANTHROPIC_KEY"\n'
        "retry_base_delay = 0.01\n"
    )


def test_key_never_printed_or_stored(server: Any, isolated_home: Path, api_key: str) -> None:
    write_config(isolated_home, server.url)
    # A tool call (for a tool that does not exist), then the answer; then a 401 echoing the key.
    server.script(server.sse("tool_use.sse"), server.sse("text_usage.sse"))
    ok = run_crab(
        isolated_home,
        "run",
        "what is the weather?",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--output",
        "jsonl",
        "--store",
        STORE,
        "--yolo",
        env={"CRAB_TEST_ANTHROPIC_KEY": api_key},
    )
    assert ok.returncode == 0, ok.stderr
    events = [json.loads(line) for line in ok.stdout.splitlines() if line.strip()]
    assert any(e.get("type") == "tool_call" for e in events)
    # Two model calls, each with usage: one usage event each (the loop's), none from the provider.
    assert [e["type"] for e in events].count("usage") == 2
    assert "Hello, world!" in ok.stdout
    assert server.requests[0].headers["x-api-key"] == api_key
    # The loop answered both calls and sent the history back as Messages API blocks.
    replayed = server.requests[1].body["messages"]
    assert [m["role"] for m in replayed] == ["user", "assistant", "user"]
    results = [b["tool_use_id"] for b in replayed[2]["content"] if b["type"] == "tool_result"]
    assert results == ["toolu_01Paris", "toolu_02Tokyo"]
    if STORE == "jsonl":
        stored = b"".join(p.read_bytes() for p in isolated_home.rglob("*") if p.is_file())
        assert b"Hello, world!" in stored  # the scan below really covers the stored session

    echoed = {"type": "error", "error": {"type": "authentication_error", "message": f"invalid x-api-key {api_key}"}}
    server.script(server.error(401, echoed))
    denied = run_crab(
        isolated_home,
        "run",
        "hi",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--store",
        STORE,
        env={"CRAB_TEST_ANTHROPIC_KEY": api_key},
    )
    assert denied.returncode != 0
    assert "CRAB_TEST_ANTHROPIC_KEY" in denied.stdout + denied.stderr

    assert find_secret(isolated_home, ok, api_key) == []
    assert find_secret(isolated_home, denied, api_key) == []


def test_key_from_auth_file_stays_in_the_auth_file(server: Any, isolated_home: Path, api_key: str) -> None:
    write_config(isolated_home, server.url)
    (isolated_home / "auth.json").write_text(json.dumps({"anthropic": api_key}))
    server.script(server.sse("text_usage.sse"))
    result = run_crab(isolated_home, "run", "hi", "--model", "anthropic/claude-sonnet-4-5", "--store", STORE)
    assert result.returncode == 0, result.stderr
    assert "Hello, world!" in result.stdout
    assert server.requests[0].headers["x-api-key"] == api_key
    assert find_secret(isolated_home, result, api_key, skip=("auth.json",)) == []


def test_missing_key_stops_before_any_request_with_exit_code_2(server: Any, isolated_home: Path) -> None:
    write_config(isolated_home, server.url)
    result = run_crab(isolated_home, "run", "hi", "--model", "anthropic/claude-sonnet-4-5")
    assert result.returncode == 2
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1
    assert "set CRAB_TEST_ANTHROPIC_KEY" in lines[0]
    assert server.requests == []
