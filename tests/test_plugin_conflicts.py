"""A third-party tool named like one of tools-basic's: one line says so, and nothing else is lost;
with nobody's order, crab's own tools-basic keeps the name (docs/plugins.md, "Two plugins, one name").

Runs the real ``crab`` with provider-mock and tools-basic installed and the ``shadow-ls`` plugin
of core's broken-plugin fixture package (a tool ``ls`` and a tool ``wordstat``) put on the path.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "core" / "tests" / "fake_plugins" / "crab_fake_broken"
BASIC = {"read", "write", "edit", "bash", "bash_output", "bash_kill", "glob", "grep"}
LINE = (
    "plugin tools-basic failed: its tool 'ls' was left out because plugin 'shadow-ls' registers one too and comes "
    "first in CRAB_PLUGINS; list tools-basic before shadow-ls there to use this one, or disable one of them "
    "(crab plugins disable shadow-ls or tools-basic)"
)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    site = tmp_path / "site"
    shutil.copytree(PACKAGE, site / PACKAGE.name)
    dist = site / "crab_fake_broken-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-fake-broken\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nshadow-ls = crab_fake_broken.shadow_ls\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(
        PYTHONPATH=str(site), CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS="provider-mock,shadow-ls,tools-basic"
    )
    return env


def crab(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120
    )


def warnings(stderr: str) -> list[str]:
    return [line.removeprefix("warning: ") for line in stderr.splitlines() if line.startswith("warning: plugin")]


def test_tools_keeps_the_other_basic_tools_and_says_which_one_clashed(env, tmp_path):
    result = crab(["tools", "--json"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    owners = {t["name"]: t["plugin"] for t in json.loads(result.stdout)}
    assert owners == {"ls": "shadow-ls", "wordstat": "shadow-ls", **dict.fromkeys(BASIC, "tools-basic")}
    assert warnings(result.stderr) == [LINE]
    listed = {r["name"]: r for r in json.loads(crab(["plugins", "list", "--json"], env, tmp_path).stdout)}
    assert listed["tools-basic"]["status"] == "loaded"  # a clash loses one tool, never the plugin
    assert f"FAIL  {LINE}" in crab(["doctor"], env, tmp_path).stdout.splitlines()  # which doctor names


def test_run_says_it_once_and_the_basic_tools_still_run(env, tmp_path):
    (tmp_path / "notes.txt").write_text("the notes\n")
    replies = [
        [{"tool": "ls", "args": {"path": "."}}, {"tool": "read", "args": {"path": "notes.txt"}}],
        [{"text": "done"}],
    ]
    (tmp_path / "script.json").write_text(json.dumps({"replies": replies}))
    result = crab(["run", "-o", "jsonl", "-m", f"mock/{'script.json'}", "go"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert [e["message"] for e in events if e["type"] == "notice"] == [LINE]
    results = {e["name"]: e for e in events if e["type"] == "tool_result"}
    assert results["ls"]["content"] == "shadow ls"
    assert not results["read"]["is_error"] and "the notes" in results["read"]["content"]


def test_installed_only_crab_s_own_plugin_keeps_the_name_until_the_user_orders_them(env, tmp_path):
    # Every installed plugin loads, sorted by name: shadow-ls sorted first and silently took `ls`;
    # then neither got it, so one stray package took a working tool away from everyone.
    del env["CRAB_PLUGINS"]
    result = crab(["tools", "--json"], env, tmp_path)
    assert result.returncode == 0, result.stderr
    owners = {t["name"]: t["plugin"] for t in json.loads(result.stdout)}
    assert owners["ls"] == "tools-basic" and owners["wordstat"] == "shadow-ls" and owners["read"] == "tools-basic"
    clash = [line for line in warnings(result.stderr) if "'ls'" in line]
    assert clash == [
        "plugin shadow-ls failed: its tool 'ls' was left out: plugin 'tools-basic', one of crab's own, registers "
        "that name, and a plugin that is only installed never takes a name from it; list shadow-ls before "
        "tools-basic in [plugins] enabled to use this one, or disable one of them (crab plugins disable shadow-ls "
        "or tools-basic)"
    ]
    home = Path(env["CRAB_HOME"])
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('[plugins]\nenabled = ["provider-mock", "shadow-ls", "tools-basic"]\n')
    settled = crab(["tools", "--json"], env, tmp_path)
    assert settled.returncode == 0, settled.stderr
    assert {t["name"]: t["plugin"] for t in json.loads(settled.stdout)}["ls"] == "shadow-ls"  # the user's word
    assert [line for line in warnings(settled.stderr) if "'ls'" in line] == [
        "plugin tools-basic failed: its tool 'ls' was left out because plugin 'shadow-ls' registers one too and "
        "comes first in [plugins] enabled; list tools-basic before shadow-ls there to use this one, or disable one "
        "of them (crab plugins disable shadow-ls or tools-basic)"
    ]
