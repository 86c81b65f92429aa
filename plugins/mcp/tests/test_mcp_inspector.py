"""``crab mcp serve`` driven by MCP Inspector's CLI mode (``mcp-inspector --cli``, npm, pinned in
tests/peers), over stdio and over streamable HTTP with the bearer token in ``--header``: tools,
resources (the workspace's files, through crab-tools-basic's read and glob) and prompts
(crab-skills' skills). A client crab did not write reads what crab serves."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

PLUGINS = "tools-basic,skills"


@pytest.fixture
def served(tmp_path: Path) -> tuple[Path, dict[str, str], str]:
    """(workspace, environment, crab's command) with a file and a user skill to serve."""
    for module in ("crab_tools_basic", "crab_skills"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (pip install -e plugins/{module[5:].replace('_', '-')})")
    crab = shutil.which("crab", path=str(Path(sys.executable).parent))
    if crab is None:
        pytest.skip("the crab console script is not installed beside this Python")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\nbeta gamma\n")
    home = tmp_path / "home"
    skill = home / "skills" / "tidy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: tidy\ndescription: Tidy a folder.\n---\nSort, then prune.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env["CRAB_HOME"] = str(home)
    return workspace, env, crab


def inspect(inspector: Path, target: list[str], cwd: Path, env: dict[str, str], *method: str) -> Any:
    done = subprocess.run(
        [str(inspector), "--cli", *target, "--method", *method],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def check_all(run: Any, workspace: Path, *, every: bool = True) -> None:
    tools = {t["name"]: t for t in run("tools/list")["tools"]}
    assert {"read", "glob"} <= set(tools) and tools["read"]["annotations"]["readOnlyHint"] is True
    called = run("tools/call", "--tool-name", "read", "--tool-arg", "path=notes.txt")
    assert "alpha" in called["content"][0]["text"] and not called.get("isError")
    uri = (workspace / "notes.txt").as_uri()
    if every:
        listed = run("resources/list")["resources"]
        assert {"name": "notes.txt", "uri": uri, "mimeType": "text/plain"} in listed
    read = run("resources/read", "--uri", uri)
    assert read["contents"][0]["text"] == "alpha\nbeta gamma\n"
    if every:
        prompts = run("prompts/list")["prompts"]
        assert [p["name"] for p in prompts] == ["tidy"]
    got = run("prompts/get", "--prompt-name", "tidy", "--prompt-args", "request=the src folder")
    text = got["messages"][0]["content"]["text"]
    assert "Sort, then prune." in text and text.endswith("the src folder")


def test_inspector_drives_crab_mcp_serve_over_stdio(inspector, served):
    workspace, env, crab = served
    target = [crab, "mcp", "serve", "--plugins", PLUGINS]
    check_all(lambda *m: inspect(inspector, target, workspace, env, *m), workspace)


def test_inspector_drives_crab_mcp_serve_over_http_with_the_bearer_token(inspector, served, tmp_path):
    workspace, env, crab = served
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    errlog = tmp_path / "serve-http.log"
    with open(errlog, "w") as err:
        proc = subprocess.Popen(
            [crab, "mcp", "serve", "--plugins", PLUGINS, "--http", str(port)],
            cwd=workspace,
            env=env,
            stdout=err,
            stderr=err,
        )
    try:
        for _ in range(600):
            assert proc.poll() is None, errlog.read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                break
            time.sleep(0.1)
        token = (Path(env["CRAB_HOME"]) / "mcp" / "serve.token").read_text().strip()
        url = f"http://127.0.0.1:{port}/mcp"
        target = [url, "--transport", "http", "--header", f"Authorization: Bearer {token}"]
        check_all(lambda *m: inspect(inspector, target, workspace, env, *m), workspace, every=False)
        refused = subprocess.run(
            [str(inspector), "--cli", url, "--transport", "http", "--method", "tools/list"],
            cwd=workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert refused.returncode != 0  # no token, no answer
    finally:
        proc.terminate()
        proc.wait(20)
    assert token not in errlog.read_text()
