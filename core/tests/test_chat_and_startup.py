"""``crab chat`` over a pipe, and what the fast commands may import."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("httpx", "rich", "mcp", "pydantic")


def test_chat_reads_lines_runs_commands_and_turns(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [[{"text": "first answer"}], [{"text": "second answer"}]]}))
    lines = "/help\nhello\n/nosuch\nagain\n/quit\nnever sent\n"
    result = crab_run(["chat", "-m", f"scripted/{path}"], env, cwd=tmp_path, stdin=lines)
    assert result.returncode == 0, result.stderr
    assert "/handoff NAME [summary]" in result.stdout
    assert "first answer\n" in result.stdout
    assert "second answer\n" in result.stdout
    assert "unknown command /nosuch" in result.stderr
    assert "never sent" not in result.stdout + result.stderr


def imported_modules(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "crab", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    names = set()
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["plugins", "list"]])
def test_fast_commands_import_nothing_heavy(args, crab_home):
    modules = imported_modules(args)
    assert modules, "importtime printed nothing"
    heavy = sorted(m for m in modules if m.split(".")[0] in HEAVY)
    assert heavy == []


def test_version_imports_almost_nothing(crab_home):
    modules = imported_modules(["--version"])
    assert not any(m.split(".")[0] in ("typer", "pluggy", "importlib.metadata") for m in modules)


def test_help_does_not_load_the_event_loop_machinery(crab_home):
    # asyncio alone is ~40 modules; --help only registers commands, so neither core nor an
    # installed plugin's top-level module may import it (bench/startup.py measures the rest).
    assert "asyncio" not in imported_modules(["--help"])
