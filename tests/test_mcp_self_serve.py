"""crab's MCP client against crab's own MCP server: ``crab run`` with ``crab mcp serve`` (with
crab-tools-basic, so it declares resources) configured as a server. Both are real processes.
``crab mcp serve`` must answer every method of each capability it declares, and crab's client
must not take an optional listing a server lacks for a dead server (issue 39, item 3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("crab_mcp")
pytest.importorskip("crab_tools_basic")
pytest.importorskip("crab_provider_mock")


def crab_run(home: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env["CRAB_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "crab", "run", *args], cwd=work, env=env, capture_output=True, text=True, timeout=180
    )


def test_crab_run_uses_crab_mcp_serve_as_a_server(tmp_path: Path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (work / "notes.txt").write_text("alpha\nneedle in a haystack\n")
    serve = ["-m", "crab", "mcp", "serve", "--plugins", "tools-basic"]
    (home / "config.toml").write_text(
        "[plugins.mcp]\nstartup_wait = 300\n"  # a loaded machine may take longer than 5 s to start it
        f"[plugins.mcp.servers.self]\ncommand = {json.dumps(sys.executable)}\nargs = {json.dumps(serve)}\n"
        "connect_timeout = 60\n"
    )
    script = tmp_path / "script.json"
    calls = [[{"tool": "self_read", "args": {"path": "notes.txt"}}], [{"text": "done"}]]
    script.write_text(json.dumps(calls))

    done = crab_run(home, work, "--yolo", "--plugins", "mcp,provider-mock", "-m", f"mock/{script}", "-o", "json", "go")
    assert done.returncode == 0, done.stderr
    assert "failed to start" not in done.stderr, done.stderr
    (call,) = json.loads(done.stdout)["tool_calls"]
    assert not call["is_error"], call["result"]
    assert "needle in a haystack" in call["result"]
