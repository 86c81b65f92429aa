"""End to end: ``crab run`` as a subprocess against the local fake server; the key must appear
in no byte the run printed or stored (stdout, stderr, every file under ``CRAB_HOME``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

CRAB = shutil.which("crab", path=str(Path(sys.executable).parent))
STORE = "jsonl" if importlib.util.find_spec("crab_tape_jsonl") else "memory"


def crab_run(home: Path, env_extra: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    assert CRAB is not None
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"CRAB_HOME": str(home), "NO_COLOR": "1", **env_extra})
    return subprocess.run(
        [CRAB, "run", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=60,
        check=False,
    )


def write_config(home: Path, server_url: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        "[plugins.provider-anthropic]\n"
        f'base_url = "{server_url}"\n'
        'api_key_env = "CRAB_TEST_ANTHROPIC_KEY"\n'
        "retry_base_delay = 0.01\n"
    )


def scan(home: Path, result: subprocess.CompletedProcess[str], key: str, skip: tuple[str, ...] = ()) -> list[str]:
    """Every place the key shows up: stdout, stderr, or a file under ``home``."""
    found = [name for name, text in (("stdout", result.stdout), ("stderr", result.stderr)) if key in text]
    for path in home.rglob("*"):
        if path.is_file() and path.name not in skip and key.encode() in path.read_bytes():
            found.append(str(path))
    return found


@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_key_never_printed_or_stored(server: Any, isolated_home: Path, api_key: str) -> None:
    write_config(isolated_home, server.url)
    # A tool call (for a tool that does not exist), then the answer; then a 401 echoing the key.
    server.script(server.sse("tool_use.sse"), server.sse("text_usage.sse"))
    ok = crab_run(
        isolated_home,
        {"CRAB_TEST_ANTHROPIC_KEY": api_key},
        "what is the weather?",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--output",
        "jsonl",
        "--store",
        STORE,
        "--yolo",
    )
    assert ok.returncode == 0, ok.stderr
    events = [json.loads(line) for line in ok.stdout.splitlines() if line.strip()]
    assert any(e.get("type") == "tool_call" for e in events)
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
    denied = crab_run(
        isolated_home,
        {"CRAB_TEST_ANTHROPIC_KEY": api_key},
        "hi",
        "--model",
        "anthropic/claude-sonnet-4-5",
        "--store",
        STORE,
    )
    assert denied.returncode != 0
    assert "CRAB_TEST_ANTHROPIC_KEY" in denied.stdout + denied.stderr

    assert scan(isolated_home, ok, api_key) == []
    assert scan(isolated_home, denied, api_key) == []


@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_key_from_auth_file_stays_in_the_auth_file(server: Any, isolated_home: Path, api_key: str) -> None:
    write_config(isolated_home, server.url)
    (isolated_home / "auth.json").write_text(json.dumps({"anthropic": api_key}))
    server.script(server.sse("text_usage.sse"))
    result = crab_run(isolated_home, {}, "hi", "--model", "anthropic/claude-sonnet-4-5", "--store", STORE)
    assert result.returncode == 0, result.stderr
    assert "Hello, world!" in result.stdout
    assert server.requests[0].headers["x-api-key"] == api_key
    assert scan(isolated_home, result, api_key, skip=("auth.json",)) == []


@pytest.mark.skipif(CRAB is None, reason="the crab console script is not installed in this environment")
def test_missing_key_stops_before_any_request_with_exit_code_2(server: Any, isolated_home: Path) -> None:
    write_config(isolated_home, server.url)
    result = crab_run(isolated_home, {}, "hi", "--model", "anthropic/claude-sonnet-4-5")
    assert result.returncode == 2
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert len(lines) == 1
    assert "set CRAB_TEST_ANTHROPIC_KEY" in lines[0]
    assert server.requests == []
