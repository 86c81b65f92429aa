"""``crab run`` with a configured MCP server (the tiny server of crab-mcp's tests): it starts once
for the run, its tools go through the permission gate like any other, and it is gone after."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("crab_mcp")
pytest.importorskip("crab_provider_mock")

TINY = Path(__file__).resolve().parents[1] / "plugins" / "mcp" / "tests" / "mcp_tiny_server.py"


def crab_run(home: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env["CRAB_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "crab", "run", *args], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )


def test_crab_run_starts_the_server_once_and_the_gate_applies(tmp_path: Path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        "[plugins.mcp]\nstartup_wait = 300\n"  # a loaded machine may take longer than 5 s to start it
        f"[plugins.mcp.servers.tiny]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(TINY), '--stderr'])}\n"
    )
    script = tmp_path / "script.json"
    calls = [[{"tool": "tiny_pid", "args": {}}], [{"tool": "tiny_add", "args": {"a": 1, "b": 2}}], [{"text": "done"}]]
    script.write_text(json.dumps(calls))

    allowed = crab_run(home, work, "--yolo", "-m", f"mock/{script}", "-o", "json", "go")
    assert allowed.returncode == 0, allowed.stderr
    result = json.loads(allowed.stdout)
    pid, added = result["tool_calls"]
    assert not pid["is_error"] and added["result"].splitlines()[2:-1] == ["3"]  # label, fence, answer, fence
    assert "this goes to stderr" not in allowed.stderr + allowed.stdout  # the server's stderr went to its log
    log = home / "mcp" / "logs" / "tiny.log"
    assert log.read_text().count("this goes to stderr") == 1  # started once for the whole run
    assert subprocess.run(["kill", "-0", pid["result"]], capture_output=True).returncode != 0  # and ended with it

    refused = crab_run(home, work, "-m", f"mock/{script}", "-o", "json", "go")
    first = json.loads(refused.stdout)["tool_calls"][0]
    assert first["is_error"] and "needs network permission" in first["result"]
