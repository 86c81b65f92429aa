"""``crab mcp serve`` stops a running tool when its client cancels the call: the MCP SDK's own
client sends ``notifications/cancelled`` (the spec's way) for a ``bash`` call running ``sleep``,
and the sleep's process is gone from /proc soon after (issue 39, item 5). Real processes
throughout; needs crab-tools-basic (the repo-level suite)."""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("crab_mcp")
pytest.importorskip("crab_tools_basic")


def running(marker: str) -> list[int]:
    """Pids whose command line holds ``marker`` (its words NUL- or space-separated: bash may exec
    the last command of ``-c`` itself)."""
    forms = (marker.encode(), marker.replace(" ", "\0").encode())
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if any(form in cmdline for form in forms):
            found.append(int(entry.name))
    return found


def test_a_cancelled_call_stops_the_tools_process_group(tmp_path: Path):
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (home / "config.toml").write_text('[plugins.mcp]\nserve_permissions = ["read", "exec"]\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env["CRAB_HOME"] = str(home)
    seconds = f"{300 + uuid.uuid4().int % 1000}.{os.getpid()}"  # a sleep no other test runs
    started = ws / "started"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "crab", "mcp", "serve", "--plugins", "tools-basic"], env=env, cwd=str(ws)
    )

    async def go() -> list[int]:
        with open(tmp_path / "serve-stderr.log", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy", read_timeout_seconds=60) as client:
                call = asyncio.create_task(
                    client.call_tool("bash", {"command": f"touch started; sleep {seconds}", "timeout": 600})
                )
                deadline = time.monotonic() + 60
                while not (started.exists() and running(f"sleep {seconds}")) and time.monotonic() < deadline:
                    assert not call.done(), call.result()
                    await asyncio.sleep(0.05)
                pids = running(f"sleep {seconds}")
                assert pids, "the bash call never started its sleep"
                call.cancel()  # the SDK sends notifications/cancelled for it
                await asyncio.gather(call, return_exceptions=True)
                deadline = time.monotonic() + 30
                while running(f"sleep {seconds}") and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                left = running(f"sleep {seconds}")
                # The server is still there and answers (the cancel ended the call, not the server).
                listed = await client.list_tools()
                assert any(t.name == "bash" for t in listed.tools)
                return left

    try:
        left = asyncio.run(go())
        said = describe(left)
    finally:
        for pid in running(f"sleep {seconds}"):
            os.kill(pid, 9)
    assert left == [], f"sleep {seconds} still runs after the client cancelled the call: {said}"


def describe(pids: list[int]) -> str:
    """What a left-over process is (its stat line and command line), for the failure message."""
    said = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().strip()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        said.append(f"{stat} [{cmdline}]")
    return "; ".join(said)
