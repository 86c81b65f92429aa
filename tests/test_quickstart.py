"""The README's quickstart: the scripted tour runs real tools on this repository, with no API key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_tour_runs_real_tools(tmp_path: Path):
    readme = (ROOT / "README.md").read_text()
    assert 'crab run -m mock/examples/tour.json "Give me a tour of this repository"' in readme
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path), CRAB_PLUGINS="provider-mock,tools-basic")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "crab",
            "run",
            "-m",
            "mock/examples/tour.json",
            "-o",
            "json",
            "Give me a tour of this repository",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["stop"] == "end"
    calls = {c["name"]: c for c in doc["tool_calls"]}
    assert set(calls) == {"ls", "grep", "read"}
    assert not any(c["is_error"] for c in calls.values()), calls
    assert "core/" in calls["ls"]["result"]
    assert "def crab_tools" in calls["grep"]["result"]
    assert "# crab" in calls["read"]["result"]


def test_the_packaged_tour_runs_real_tools_in_any_folder(tmp_path: Path):
    """``-m mock/tour`` ships in crab-provider-mock, so a pip user needs no file of their own."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("# notes\nTODO: write more\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(tmp_path / "home"), CRAB_PLUGINS="provider-mock,tools-basic")
    result = subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", "mock/tour", "-o", "json", "Give me a tour of this folder"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    calls = {c["name"]: c for c in doc["tool_calls"]}
    assert set(calls) == {"ls", "glob", "grep"}
    assert not any(c["is_error"] for c in calls.values()), calls
    assert "notes.md:2:TODO: write more" in calls["grep"]["result"]
    assert "scripted tour" in doc["text"]
