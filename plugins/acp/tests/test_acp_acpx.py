"""``crab acp`` driven by a reference client from another project: acpx (npm), a headless ACP
client CLI that serves files and terminals itself, as an editor does."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

PERMISSION_DENIED = 5
"""acpx's exit code when it refused a permission request (its EXIT_CODES.PERMISSION_DENIED)."""


def _exec(acpx: Path, crab_acp: Any, model: str, policy: str, code: int = 0) -> list[dict[str, Any]]:
    agent = shlex.join([sys.executable, *crab_acp.argv(model)])
    done = subprocess.run(
        [str(acpx), "--agent", agent, policy, "--format", "json", "--timeout", "60", "exec", "write and run"],
        env=crab_acp.env,
        cwd=crab_acp.work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == code, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def _script(crab_acp: Any) -> str:
    return crab_acp.script(
        [{"text": "writing"}, {"tool": "write", "args": {"path": "hello.txt", "content": "hi\n"}}],
        [{"tool": "bash", "args": {"command": "echo ran-in-acpx > ran.txt"}}],
        [{"text": "all done"}],
    )


def test_acp_acpx_approving_everything(acpx: Path, crab_acp: Any) -> None:
    messages = _exec(acpx, crab_acp, _script(crab_acp), "--approve-all")
    methods = [m.get("method") for m in messages]
    assert "fs/write_text_file" in methods and "terminal/create" in methods  # acpx served both
    assert methods.count("session/request_permission") == 2
    assert (crab_acp.work / "hello.txt").read_text() == "hi\n"
    assert (crab_acp.work / "ran.txt").read_text() == "ran-in-acpx\n"
    ends = [m["result"] for m in messages if isinstance(m.get("result"), dict) and "stopReason" in m["result"]]
    assert ends == [{"stopReason": "end_turn"}]


def test_acp_acpx_denying_everything(acpx: Path, crab_acp: Any) -> None:
    messages = _exec(acpx, crab_acp, _script(crab_acp), "--deny-all", PERMISSION_DENIED)
    assert not (crab_acp.work / "hello.txt").exists() and not (crab_acp.work / "ran.txt").exists()
    failed = [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"].get("status") == "failed"
    ]
    assert len(failed) == 2
