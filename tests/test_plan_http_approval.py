"""crab-plan's approval over crab-http, as a client would do it: ``crab serve http`` on 127.0.0.1,
a real HTTP client; ``/plan``, then the model's ``present_plan`` arrives on the client's stream as
a ``question`` event, another token cannot answer it, the client's ``Approve`` ends plan mode and
the write that follows is asked (and allowed) over the same stream."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from crab.testing import ScriptedSite

pytest.importorskip("crab_http")
pytest.importorskip("crab_plan")

WAIT = 60.0
NOTES = '''"""A test plugin: write_note writes a file in the workspace (permission write)."""

from collections.abc import Iterator
from pathlib import Path

import crab


@crab.tool(permission="write")
def write_note(name: str, text: str, ctx: crab.ToolContext) -> str:
    """Write text to a file of the workspace."""
    (Path(ctx.workspace) / name).write_text(text, encoding="utf-8")
    return f"wrote {name}"


@crab.hookimpl
def crab_tools(config):
    return [write_note]
'''
PLAN_CALL = [{"tool": "present_plan", "args": {"plan": "Write the note.", "steps": ["write note.txt"]}}]
WRITE = [{"tool": "write_note", "args": {"name": "note.txt", "text": "hi"}}]


def events(lines: Iterator[str], stop: str) -> list[dict[str, Any]]:
    """The stream's next JSON events up to and with the first of type ``stop``; ``lines`` is one
    ``iter_lines()`` kept for the whole response (a second one would find the stream consumed)."""
    seen: list[dict[str, Any]] = []
    for line in lines:
        if line.startswith("data: "):
            seen.append(json.loads(line.removeprefix("data: ")))
            if seen[-1]["type"] == stop:
                return seen
    raise AssertionError(f"the stream ended before a {stop!r} event: {seen}")


def test_a_plan_is_approved_by_the_http_client_that_holds_the_session(tmp_path: Path) -> None:
    site = ScriptedSite(tmp_path)
    site.add_plugin("notes", "crab_plan_http_notes", NOTES)
    site.script([PLAN_CALL, WRITE, [{"text": "note written"}]])
    work = tmp_path / "work"
    work.mkdir()
    env = site.env("fake,plan,notes,http")
    (Path(env["CRAB_HOME"]) / "config.toml").write_text("[plugins.http]\nport = 0\nrate_limit = 100000\n")
    tokens = []
    for name in ("laptop", "phone"):
        made = subprocess.run(
            [sys.executable, "-m", "crab", "http", "token", "create", name],
            env=env, cwd=work, capture_output=True, text=True, timeout=WAIT,
        )  # fmt: skip
        assert made.returncode == 0, made.stderr
        tokens.append({"Authorization": f"Bearer {made.stdout.strip()}"})
    mine, other = tokens
    proc = subprocess.Popen(
        [sys.executable, "-m", "crab", "serve", "http", "--provider", "fake", "-m", "script"],
        env=env, cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stderr.readline, "")), daemon=True)  # type: ignore[union-attr]
    reader.start()
    try:
        deadline = time.monotonic() + WAIT
        while not (found := re.search(r"listening on (http://127\.0\.0\.1:\d+)/", "".join(lines))):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.05)
        with httpx.Client(base_url=found.group(1), timeout=30) as client:
            sid = client.post("/v1/sessions", headers=mine, json={"title": "plan"}).json()["id"]
            with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=mine, json={"text": "/plan"}) as r:
                said = events(r.iter_lines(), "command_output")[-1]
            assert "plan mode on" in said["text"], said
            with client.stream(
                "POST", f"/v1/sessions/{sid}/messages", headers=mine, json={"text": "write a note"}
            ) as r:
                stream = r.iter_lines()
                asked = events(stream, "question")[-1]
                assert asked["text"].startswith("The model's plan:") and "write note.txt" in asked["text"]
                assert asked["choices"] == ["Approve", "Leave plan mode"]
                path = f"/v1/sessions/{sid}/questions/{asked['id']}"
                assert client.post(path, headers=other, json={"answer": "Approve"}).status_code == 404
                assert client.post(path, headers=mine, json={"answer": "1"}).json() == {"answer": "Approve"}
                permission = events(stream, "permission_request")[-1]
                assert permission["tool"] == "write_note"
                answered = client.post(
                    f"/v1/sessions/{sid}/permissions/{permission['id']}", headers=mine, json={"answer": "once"}
                )
                assert answered.status_code == 200
                end = events(stream, "turn_end")[-1]
            assert end["text"] == "note written"
        assert (work / "note.txt").read_text() == "hi"
        results = [m["content"] for m in site.requests()[-1]["messages"] if m.get("role") == "tool"]
        assert results[0].startswith("[plan approved]") and results[1] == "wrote note.txt"
    finally:
        proc.terminate()
        proc.wait(WAIT)
