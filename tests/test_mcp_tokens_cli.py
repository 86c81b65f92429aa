"""``crab tools --tokens`` counts what a request carries, so tools added at start-up (an MCP
server's, through ``AgentHandle.add_tools``) are in it: the figure crab-mcp users need most."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

pytest.importorskip("crab_mcp")

TINY = Path(__file__).resolve().parents[1] / "plugins" / "mcp" / "tests" / "mcp_tiny_server.py"


def crab(home: Path, work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="mcp,tools-basic")
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )


def test_tools_tokens_counts_the_tools_mcp_servers_add_at_start_up(tmp_path: Path):
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    (home / "config.toml").write_text(
        "[plugins.mcp]\nstartup_wait = 300\n"  # a loaded machine may take longer than 5 s to start it
        f"[plugins.mcp.servers.tiny]\ncommand = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([str(TINY), '--stderr'])}\n"
        '[plugins.mcp.servers.gone]\ncommand = "/nonexistent/mcp-server"\n'
    )
    result = crab(home, work, "tools", "--tokens", "--json")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    rows = {r["name"]: r for r in doc["tools"]}
    assert {"tiny_add", "tiny_echo", "read"} <= set(rows)
    assert rows["tiny_add"]["stub"] < rows["tiny_add"]["full"]
    assert doc["total"]["progressive"] < doc["total"]["full"]
    assert "MCP server 'gone' failed to start" in result.stderr  # one warning line, no traceback
    assert "Traceback" not in result.stderr
    text = crab(home, work, "tools", "--tokens")
    assert "tiny_add" in text.stdout and "total" in text.stdout
