"""Text that is not valid UTF-8 never ends a turn (issue 9, item 7).

A model may send a lone surrogate (JSON ``"\\udcff"``) in tool arguments, text or thinking, and
tools return such text for undecodable file names. Through the real ``crab`` command: the turn
ends normally, and stdout of every output format is valid UTF-8 (JSON documents parse), with the
loop guard hashing the same arguments again and again; what goes to a model is valid UTF-8 too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from crab.testing.http_replay import HttpReply, ReplayServer

pytestmark = pytest.mark.slow

SURROGATE_PATH = "x\udcff.txt"
SCRIPT = [
    [{"thinking": "bad \udcff byte"}, {"tool": "read", "args": {"path": SURROGATE_PATH}}],
    [{"tool": "read", "args": {"path": SURROGATE_PATH}}],  # the guard hashes the same arguments again
    [{"tool": "ls", "args": {"path": "."}}],
    [{"text": "done \udcff \ud800"}],
]


def _env(tmp_path: Path, plugins: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS=plugins)
    return env


def _work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    (work / os.fsdecode(b"name-\xff.txt")).write_text("undecodable name\n")
    return work


@pytest.mark.parametrize("output", ["text", "json", "jsonl"])
def test_lone_surrogates_from_the_model_and_tools_never_end_the_turn(tmp_path, output):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))  # json escapes the surrogates as \udcff, as a model's JSON would
    result = subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", f"mock/{script}", "-o", output, "go"],
        cwd=_work(tmp_path),
        env=_env(tmp_path, "provider-mock,tools-basic"),
        capture_output=True,
        timeout=120,
    )
    stdout, stderr = result.stdout.decode("utf-8"), result.stderr.decode("utf-8")  # strict: valid UTF-8
    assert result.returncode == 0, stderr
    assert "Traceback" not in stderr and "internal error" not in stdout + stderr
    if output == "json":
        document = json.loads(stdout)
        assert document["stop"] == "end" and document["text"] == "done \ufffd \ufffd"
        assert document["tool_calls"][0]["arguments"] == {"path": "x\ufffd.txt"}
    elif output == "jsonl":
        events = [json.loads(line) for line in stdout.splitlines()]
        assert events[-1]["type"] == "turn_end" and events[-1]["stop"] == "end"
        assert [e["call"]["name"] for e in events if e["type"] == "tool_call"] == ["read", "read", "ls"]
    else:
        assert stdout.strip() == "done \ufffd \ufffd"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return (
        b"data: " + json.dumps({"id": "c1", "object": "chat.completion.chunk", "choices": [choice]}).encode() + b"\n\n"
    )


def test_what_goes_back_to_a_model_is_valid_utf8(tmp_path):
    arguments = json.dumps({"path": SURROGATE_PATH})  # '{"path": "x\\udcff.txt"}' on the wire
    call = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": arguments}}
    tool_reply = [_chunk({"role": "assistant", "tool_calls": [call]}), _chunk({}, "tool_calls"), b"data: [DONE]\n\n"]
    answer = [_chunk({"role": "assistant", "content": "ok"}), _chunk({}, "stop"), b"data: [DONE]\n\n"]
    with ReplayServer() as server:
        server.script(HttpReply(events=tool_reply), HttpReply(events=answer))
        home = tmp_path / "home"
        home.mkdir()
        (home / "config.toml").write_text(
            f'[plugins.provider-openai]\nbase_url = "{server.url}"\napi_key_env = "CRAB_TEST_OPENAI_KEY"\n'
        )
        env = _env(tmp_path, "provider-openai,tools-basic")
        env["CRAB_TEST_OPENAI_KEY"] = "test-key-not-real"
        command = [sys.executable, "-m", "crab", "run", "--provider", "openai", "--model", "gpt-4.1-mini"]
        result = subprocess.run(
            [*command, "-o", "json", "read it"],
            cwd=_work(tmp_path),
            env=env,
            capture_output=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr.decode()
        assert json.loads(result.stdout.decode("utf-8"))["text"] == "ok"
        assert len(server.requests) == 2
        sent = _strings(server.requests[1].body)  # the server parsed the body: it was valid JSON
        assert any("x\ufffd.txt" in s for s in sent)
        for s in sent:
            s.encode("utf-8")  # raises on a lone surrogate, escaped or raw ("" is a valid string too)


@pytest.mark.parametrize("store", ["tape-jsonl", "store-sqlite"])
def test_a_session_holding_lone_surrogates_exports_and_shows_as_valid_utf8(tmp_path, store):
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = _env(tmp_path, f"provider-mock,tools-basic,{store}")
    work = _work(tmp_path)
    ran = subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", f"mock/{script}", "-o", "json", "go"],
        cwd=work, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr.decode("utf-8")
    session = json.loads(ran.stdout)["session_id"]
    commands = {
        "jsonl": ["export", session],
        "jsonl-file": ["export", session, "-o", str(tmp_path / "out.jsonl")],
        "markdown": ["export", session, "-f", "markdown"],
        "markdown-file": ["export", session, "-f", "markdown", "-o", str(tmp_path / "out.md")],
        "show": ["show", session],
    }
    for name, args in commands.items():
        done = subprocess.run(
            [sys.executable, "-m", "crab", "sessions", *args], cwd=work, env=env, capture_output=True, timeout=60
        )
        done.stdout.decode("utf-8")  # strict: valid UTF-8
        stderr = done.stderr.decode("utf-8")
        assert done.returncode == 0, f"{name}: {stderr}"
        assert "Traceback" not in stderr, name
    jsonl = (tmp_path / "out.jsonl").read_bytes().decode("utf-8")
    entries = [json.loads(line) for line in jsonl.splitlines()]
    # The export keeps the surrogates as JSON escapes: nothing is lost, and the file is valid UTF-8.
    assert any("name-\udcff.txt" in json.dumps(entry, ensure_ascii=False) for entry in entries)
    (tmp_path / "out.md").read_bytes().decode("utf-8")
