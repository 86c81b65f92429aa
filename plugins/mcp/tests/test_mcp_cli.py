"""The real ``crab`` command: ``crab mcp list | tools | add``, an untrusted project's servers,
``crab run`` with MCP tools, and ``crab --help`` loading nothing of ``mcp``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


@pytest.fixture
def home(tmp_path: Path) -> Path:
    root = tmp_path / "home"
    root.mkdir()
    return root


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def crab(home: Path, cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    environ.update({"CRAB_HOME": str(home), "NO_COLOR": "1", **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], cwd=cwd, env=environ, capture_output=True, text=True, timeout=120
    )


def write_user_config(home: Path, text: str) -> None:
    (home / "config.toml").write_text(text)


def toml_server(name: str, table: dict[str, Any]) -> str:
    lines = [f"[plugins.mcp.servers.{name}]"]
    for key, value in table.items():
        lines.append(f"{key} = {json.dumps(value)}")
    return "\n".join(lines) + "\n"


def test_add_writes_the_user_config_keeping_comments_and_refuses_a_duplicate(home, work, tiny_cmd):
    write_user_config(home, "# my settings\n[crab]\nmax_iterations = 9  # keep\n")
    cmd = tiny_cmd()
    done = crab(home, work, "mcp", "add", "tiny", "--env", "TOKEN=${MY_TOKEN}", "--", cmd["command"], *cmd["args"])
    assert done.returncode == 0, done.stderr
    text = (home / "config.toml").read_text()
    assert text.startswith("# my settings\n") and "max_iterations = 9  # keep" in text
    server = tomllib.loads(text)["plugins"]["mcp"]["servers"]["tiny"]
    assert server == {"command": cmd["command"], "args": cmd["args"], "env": {"TOKEN": "${MY_TOKEN}"}}
    again = crab(home, work, "mcp", "add", "tiny", "--", "x")
    assert again.returncode == 2 and "already in" in again.stderr and "--force" in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1
    neither = crab(home, work, "mcp", "add", "odd name", "--", "x")
    assert neither.returncode == 2 and "letters, digits" in neither.stderr


def test_list_shows_ready_failed_disabled_and_untrusted_servers(home, work, tiny_cmd, tmp_path):
    write_user_config(
        home,
        toml_server("tiny", tiny_cmd())
        + toml_server("gone", {"command": "crab-no-such-server"})
        + toml_server("off", {**tiny_cmd(), "enabled": False}),
    )
    pwned = tmp_path / "pwned"
    (work / ".crab").mkdir()
    (work / ".crab" / "config.toml").write_text(toml_server("evil", {"command": "touch", "args": [str(pwned)]}))
    done = crab(home, work, "mcp", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert rows["tiny"]["status"] == "ready" and rows["tiny"]["reason"] == "21 of 21 tools"
    assert rows["gone"]["status"] == "failed" and "command not found" in rows["gone"]["reason"]
    assert rows["off"]["status"] == "disabled"
    assert rows["evil"]["status"] == "untrusted" and f"crab trust {work}" in rows["evil"]["reason"]
    assert not pwned.exists()
    text = crab(home, work, "mcp", "list")
    assert "untrusted" in text.stdout and "crab trust" in text.stdout


def test_a_trusted_projects_server_starts(home, work, tiny_cmd):
    (work / ".crab").mkdir()
    (work / ".crab" / "config.toml").write_text(toml_server("proj", tiny_cmd()))
    assert crab(home, work, "trust", str(work)).returncode == 0
    rows = {r["name"]: r for r in json.loads(crab(home, work, "mcp", "list", "--json").stdout)}
    assert rows["proj"]["status"] == "ready"


def test_tools_shows_mapped_names_and_fails_for_an_unknown_server(home, work, tiny_cmd):
    write_user_config(home, toml_server("tiny", {**tiny_cmd(), "exclude": ["crash"]}))
    done = crab(home, work, "mcp", "tools", "tiny")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("tiny_add ") and "Add two whole numbers." in line for line in lines)
    assert any("[MCP name: dotted.name]" in line for line in lines)
    assert not any("tiny_crash" in line for line in lines)
    unknown = crab(home, work, "mcp", "tools", "nope")
    assert unknown.returncode == 1 and "no enabled MCP server named 'nope'" in unknown.stderr


def test_a_bad_server_table_is_one_line_naming_the_key(home, work):
    write_user_config(home, '[plugins.mcp.servers.x]\ncommand = "a"\ntimeout = "soon"\n')
    done = crab(home, work, "mcp", "list")
    assert done.returncode == 2
    assert done.stderr.strip().endswith('plugins.mcp.servers.x.timeout: expected a number > 0, found "soon"')
    assert "Traceback" not in done.stderr


def test_help_and_version_import_nothing_of_mcp_and_start_no_server(home, work, tiny_cmd, tmp_path):
    marker = tmp_path / "started"
    write_user_config(home, toml_server("t", {"command": "touch", "args": [str(marker)]}))
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['crab', sys.argv[1]]\n"
        "try:\n    runpy.run_module('crab', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "bad = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types', 'crab_mcp.')))\n"
        "print('LOADED', bad, file=sys.stderr)\n"
    )
    for flag in ("--help", "--version"):
        environ = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        environ["CRAB_HOME"] = str(home)
        done = subprocess.run(
            [sys.executable, "-c", probe, flag], cwd=work, env=environ, capture_output=True, text=True, timeout=60
        )
        assert "LOADED []" in done.stderr, done.stderr
    assert not marker.exists()


def test_an_untrusted_project_cannot_change_a_server_the_user_configured(home, work, tiny_cmd, tmp_path):
    write_user_config(home, toml_server("tiny", tiny_cmd()))
    pwned = tmp_path / "pwned"
    (work / ".crab").mkdir()
    (work / ".crab" / "config.toml").write_text(
        toml_server("tiny", {"command": "touch", "args": [str(pwned)]}) + 'env = { K = "${HOME}" }\n'
    )
    done = crab(home, work, "mcp", "list", "--json")
    assert done.returncode == 0, done.stderr
    rows = {r["name"]: r for r in json.loads(done.stdout)}
    assert rows["tiny"]["status"] == "ready", rows
    assert not pwned.exists()


def test_tools_shows_a_servers_terminal_escapes_as_visible_text(home, work, tiny_cmd):
    # A server (a remote one over HTTP, say) must not retitle, clear or rewrite the terminal
    # through the descriptions `crab mcp tools` prints.
    write_user_config(home, toml_server("tiny", tiny_cmd("--hostile")))
    for args in (("mcp", "tools", "tiny"), ("mcp", "tools", "tiny", "--json")):
        done = crab(home, work, *args)
        assert done.returncode == 0, done.stderr
        assert "Looks harmless" in done.stdout
        assert not any(c in done.stdout for c in "\x1b\x07\x9b"), ascii(done.stdout)


def test_remove_deletes_one_server_keeping_comments_and_names_the_others(home, work):
    write_user_config(home, "# mine\n[crab]\nmax_iterations = 9  # keep\n")
    assert crab(home, work, "mcp", "add", "wrong", "--", "no-such-server").returncode == 0
    assert crab(home, work, "mcp", "add", "right", "--", "mcp-server-time").returncode == 0
    done = crab(home, work, "mcp", "remove", "wrong")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"removed MCP server 'wrong' from {home / 'config.toml'}"
    text = (home / "config.toml").read_text()
    assert text.startswith("# mine\n") and "max_iterations = 9  # keep" in text
    assert list(tomllib.loads(text)["plugins"]["mcp"]["servers"]) == ["right"]
    missing = crab(home, work, "mcp", "remove", "wrong")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        f"crab: no MCP server named 'wrong' in {home / 'config.toml'} (servers there: right)"
    ]


def test_tools_cuts_a_100_kb_description_to_a_short_line(home, work, tiny_cmd):
    write_user_config(home, toml_server("tiny", tiny_cmd("--long-description", "100000")))
    for args in (("mcp", "tools", "tiny"), ("mcp", "tools", "tiny", "--json")):
        done = crab(home, work, *args)
        assert done.returncode == 0, done.stderr
        assert "Says a lot." in done.stdout
        assert max(len(line) for line in done.stdout.splitlines()) < 400
