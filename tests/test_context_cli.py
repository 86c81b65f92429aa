"""Context handling through the real `crab` command: `crab tools --tokens`, and a context-overflow
error from the openai plugin (the recorded HTTP 400 body, on 127.0.0.1) that compacts the stored
session and retries the call, so the user gets the answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from crab._loop import compaction
from crab.testing.http_replay import HttpReply, ReplayServer

ROOT = Path(__file__).resolve().parents[1]
OVERFLOW = ROOT / "plugins" / "provider-openai" / "tests" / "fixtures" / "context_length_exceeded.body"


def answer(text: str) -> HttpReply:
    head = {"id": "c1", "object": "chat.completion.chunk"}
    chunks = [
        {**head, "choices": [{"index": 0, "delta": {"content": text}}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return HttpReply(events=[*(f"data: {json.dumps(c)}\n\n".encode() for c in chunks), b"data: [DONE]\n\n"])


def environment(tmp_path: Path, plugins: str, config: str = "") -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS=plugins)
    return env


def crab(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crab", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_tools_tokens_shows_the_saving(tmp_path: Path) -> None:
    env = environment(tmp_path, "tools-basic")
    result = crab(["tools", "--tokens"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    assert " progressive (" in result.stdout and "% fewer" in result.stdout
    data = json.loads(crab(["tools", "--tokens", "--json"], env, tmp_path).stdout)
    assert {r["name"] for r in data["tools"]} >= {"read", "bash", "grep"}
    assert data["total"]["progressive"] < data["total"]["full"] and data["total"]["saving"] > 0.6
    # The system prompt counts too: core's part and crab-tools-basic's guidance, then the stubs.
    assert 600 < data["total"]["system_prompt"] < 1000
    assert data["total"]["first_request"] == data["total"]["system_prompt"] + data["total"]["progressive"]
    assert f"first request (prompt and tool list): {data['total']['first_request']} tokens" in result.stdout


def test_an_overflow_from_the_provider_compacts_the_session_and_retries(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    body = "\n".join(line for line in OVERFLOW.read_text().splitlines() if not line.startswith("#")).encode()
    with ReplayServer() as server:
        config = f'[plugins.provider-openai]\nbase_url = "{server.url}"\n'
        env = environment(tmp_path, "provider-openai,tape-jsonl", config)
        base = ["run", "--provider", "openai", "--model", "m", "-o", "json"]
        server.script(answer("first answer"), answer("second answer"))
        assert crab([*base, "first question"], env, work).returncode == 0
        assert crab([*base, "-c", "second question"], env, work).returncode == 0
        summary = answer("Goal: questions. Progress: two answered.")
        server.script(server.error(400, body), summary, answer("third answer"))
        result = crab([*base, "-c", "third question"], env, work)
        bodies: list[Any] = [r.body for r in server.requests]
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["text"] == "third answer"
    overflowed, summary, retry = bodies[2:]
    assert summary["messages"][0] == {"role": "system", "content": compaction.SYSTEM}
    assert "first question" in summary["messages"][1]["content"]
    assert "tools" not in summary
    assert len(retry["messages"]) < len(overflowed["messages"])
    assert retry["messages"][-1] == {"role": "user", "content": "third question"}
    assert "Goal: questions. Progress: two answered." in retry["messages"][0]["content"]
    # the full history stays in the store, the compaction anchor after it
    sessions = list((tmp_path / "home" / "sessions").rglob("*.jsonl"))
    assert len(sessions) == 1
    text = sessions[0].read_text()
    entries = [json.loads(line) for line in text.splitlines()[1:]]
    said = [e["payload"]["content"] for e in entries if e["type"] == "message"]
    assert said[:2] == ["first question", "first answer"]
    [anchor] = [e["payload"] for e in entries if e["type"] == "anchor"]
    assert anchor["compaction"]["reason"] == "overflow"
