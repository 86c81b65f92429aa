"""A planted key never leaves redacted: not on stdout or stderr, not in any file under CRAB_HOME
or the temp folder (issue 9, item 4), whatever the model echoes and whatever a tool returns.

The key sits in an environment variable named like a key (``*_API_KEY``), as a user's would.
The scripted model echoes it split across two text deltas, in its thinking, and in a bash
call's arguments; bash prints it back. The scan reads every file as bytes.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

HEX = secrets.token_hex(16)
KEY = f"sk-planted-{HEX}"
FRAGMENTS = (KEY, HEX[:10], HEX[-10:])  # a key cut in two must not leak either half


def _script(command: str) -> list[object]:
    return [
        [
            {"thinking": f"The user's key is {KEY}."},
            {"text": f"Your key is {KEY[:27]}"},
            {"text": f"{KEY[27:]}, I will echo it."},
            {"tool": "bash", "args": {"command": command}},
        ],
        [{"text": f"It printed {KEY}."}],
    ]


def _run(tmp_path: Path, output: str, command: str) -> tuple[subprocess.CompletedProcess[bytes], list[Path]]:
    home, work, temp = tmp_path / "home", tmp_path / "work", tmp_path / "tmp"
    for folder in (home, work, temp):
        folder.mkdir(exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(_script(command)))
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(
        CRAB_HOME=str(home),
        CRAB_PLUGINS="provider-mock,tools-basic",
        TMPDIR=str(temp),
        PLANTED_API_KEY=KEY,
    )
    command_line = [sys.executable, "-m", "crab", "run", "-m", f"mock/{script}"]
    result = subprocess.run(
        [*command_line, "--yolo", "--output", output, f"Here is my key: {KEY}. Echo it."],
        cwd=work,
        env=env,
        capture_output=True,
        timeout=120,
    )
    return result, [home, temp]


def _leaks(data: bytes) -> list[str]:
    return [fragment for fragment in FRAGMENTS if fragment.encode() in data]


def _scan(result: subprocess.CompletedProcess[bytes], roots: list[Path]) -> dict[str, list[str]]:
    found = {name: _leaks(data) for name, data in (("stdout", result.stdout), ("stderr", result.stderr))}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                found[str(path)] = _leaks(path.read_bytes())
    return {where: leaks for where, leaks in found.items() if leaks}


@pytest.mark.parametrize("output", ["jsonl", "json", "text"])
def test_a_planted_key_is_never_printed_or_stored(tmp_path, output):
    result, roots = _run(tmp_path, output, f"echo {KEY}; echo $PLANTED_API_KEY")
    assert result.returncode == 0, result.stderr.decode()
    assert _scan(result, roots) == {}
    assert b"[redacted]" in result.stdout + result.stderr
    if output == "jsonl":
        events = [json.loads(line) for line in result.stdout.decode().splitlines()]
        text = "".join(e["text"] for e in events if e["type"] == "text_delta")
        assert text == "Your key is [redacted], I will echo it.It printed [redacted]."
        (call,) = [e["call"] for e in events if e["type"] == "tool_call"]
        assert call["arguments"]["command"] == "echo [redacted]; echo $PLANTED_API_KEY"
        (tool,) = [e for e in events if e["type"] == "tool_result"]
        assert tool["content"].split()[:2] == ["[redacted]", "[redacted]"]


def test_a_cut_bash_output_leaves_no_key_in_its_log(tmp_path):
    # 3,000 lines is past bash's 2,000-line cut, so the tool keeps a log file of the whole output.
    # Redacting and capping that log is the tools-basic side (the `contain` branch); until it is
    # merged, the assertion on the log folder under TMPDIR fails.
    result, roots = _run(tmp_path, "jsonl", "for i in $(seq 3000); do echo $PLANTED_API_KEY; done")
    assert result.returncode == 0, result.stderr.decode()
    assert _scan(result, roots) == {}
