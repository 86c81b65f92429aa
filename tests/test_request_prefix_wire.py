"""The request-prefix invariant (issue 38) on the wire: the real ``crab run`` and ``crab run -c``,
a new process for every turn, crab-provider-openai against ``crab.testing.ReplayServer`` (which
records every request body), crab-skills, crab-tools-basic and the jsonl tape. Every body carries
the same ``tools`` and system message, byte for byte once serialised, and its messages start
with the previous body's, except exactly once at a compaction; the summary request itself is the
session's request plus one instruction. The scripted replies follow the OpenAI chat-completions
stream format that crab-provider-openai's fixtures were recorded from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from crab.testing.http_replay import HttpReply, ReplayServer
from crab.testing.images import make_png

HEAD = {"id": "c1", "object": "chat.completion.chunk"}


def stream(*chunks: dict[str, Any], finish: str) -> HttpReply:
    events = [{**HEAD, "choices": [{"index": 0, "delta": delta}]} for delta in chunks]
    events.append({**HEAD, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return HttpReply(events=[*(f"data: {json.dumps(e)}\n\n".encode() for e in events), b"data: [DONE]\n\n"])


def answer(text: str) -> HttpReply:
    return stream({"content": text}, finish="stop")


def call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> HttpReply:
    function = {"name": name, "arguments": json.dumps(arguments)}
    delta = {"tool_calls": [{"index": 0, "id": call_id, "type": "function", "function": function}]}
    return stream(delta, finish="tool_calls")


def environment(tmp_path: Path, config: str) -> dict[str, str]:
    home = tmp_path / "home"
    (home / "skills" / "notes").mkdir(parents=True)
    (home / "skills" / "notes" / "SKILL.md").write_text(
        "---\nname: notes\ndescription: How to keep notes.\n---\nWrite notes in NOTES.md.\n"
    )
    (home / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="provider-openai,tape-jsonl,tools-basic,skills", OPENAI_API_KEY="k")
    return env


def crab(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crab", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def prefix(body: dict[str, Any]) -> tuple[str, str]:
    """The serialised tools and system message of a request body."""
    system = [m for m in body["messages"] if m["role"] == "system"]
    return json.dumps(body.get("tools"), sort_keys=True), json.dumps(system, sort_keys=True)


def messages(body: dict[str, Any]) -> list[str]:
    return [json.dumps(m, sort_keys=True) for m in body["messages"] if m["role"] != "system"]


def extends(longer: list[str], shorter: list[str]) -> bool:
    return longer[: len(shorter)] == shorter


def is_summary(body: dict[str, Any]) -> bool:
    last = body["messages"][-1]
    return last["role"] == "user" and str(last.get("content", "")).startswith("[crab] Compaction")


def test_the_wire_prefix_stays_the_same_across_processes_and_resets_once_at_a_compaction(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("alpha\n")
    (work / "pic.png").write_bytes(make_png(2, 2))
    with ReplayServer() as server:
        config = f'[plugins.provider-openai]\nbase_url = "{server.url}"\n[crab]\npermissions = "yolo"\n'
        env = environment(tmp_path, config)
        run = ["run", "--provider", "openai", "--model", "m", "-o", "json"]
        turns: list[tuple[list[str], list[HttpReply]]] = [
            (["read a.txt, see $grep"], [call("read", {"path": "a.txt"}), answer("it says alpha")]),
            (["-c", "search it"], [call("grep", {"pattern": 7}), answer("grep needs a string")]),
            (["-c", "use the notes skill"], [call("skill", {"name": "notes"}), answer("notes go in NOTES.md")]),
            (["-c", "-a", "pic.png", "what is this"], [answer("a red square")]),
            (["-c", "/compact"], [answer("Goal: look at files. Progress: read a.txt, saw a picture.")]),
            (["-c", "after the compaction"], [answer("still here")]),
            (["-c", "and once more"], [call("ls", {"path": "."}), answer("two files")]),
        ]
        for args, replies in turns:
            server.script(*replies)
            result = crab([*run, *args], env, work)
            assert result.returncode == 0, result.stderr
        bodies = [r.body for r in server.requests]
    assert len(bodies) == 11
    summary = next(i for i, b in enumerate(bodies) if is_summary(b))
    assert summary == 7
    # The summary request is the session's own request (same prefix, same messages) plus the instruction.
    assert prefix(bodies[summary]) == prefix(bodies[summary - 1])
    before = messages(bodies[summary - 1])
    assert messages(bodies[summary])[: len(before)] == before
    chain = [b for b in bodies if not is_summary(b)]
    changed = [i for i in range(1, len(chain)) if prefix(chain[i]) != prefix(chain[i - 1])]
    restarted = [i for i in range(1, len(chain)) if not extends(messages(chain[i]), messages(chain[i - 1]))]
    assert changed == restarted == [summary]  # the compaction, once (its summary joins the system prompt)
    tools, _ = prefix(chain[0])
    assert all(prefix(b)[0] == tools for b in bodies)  # the tools array never changed, the summary's included
    grep_result = [m for m in bodies[3]["messages"] if m["role"] == "tool"][-1]
    assert "invalid arguments for grep" in grep_result["content"] and "Its full schema:" in grep_result["content"]
