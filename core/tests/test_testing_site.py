"""crab.testing's ``ScriptedSite`` through the real ``crab`` command: models given as ModelInfo
fields, a script per process named by its model id, a looping script, and what was sent logged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from crab.testing import ScriptedSite


def crab(site: ScriptedSite, *args: str) -> subprocess.CompletedProcess[str]:
    work = site.root / "work"
    work.mkdir(exist_ok=True)
    command = [sys.executable, "-m", "crab", *args]
    return subprocess.run(command, env=site.env(), cwd=work, capture_output=True, text=True, timeout=120)


def test_a_model_given_as_fields_is_listed_with_its_prices_and_window(tmp_path: Path) -> None:
    big = {"id": "big", "context_window": 50_000, "input_price": 3.0, "output_price": 6.0}
    site = ScriptedSite(tmp_path, models=("script", big), context_window=100_000)
    assert site.models == ("script", "big")
    done = crab(site, "models", "--json")
    assert done.returncode == 0, done.stderr
    listed = {m["id"]: (m["context_window"], m["input_price"], m["output_price"]) for m in json.loads(done.stdout)}
    assert listed == {"fake/script": (100_000, None, None), "fake/big": (50_000, 3.0, 6.0)}


def test_a_model_id_naming_a_script_file_replays_that_file(tmp_path: Path) -> None:
    site = ScriptedSite(tmp_path)
    site.script([[{"text": "from the site's script"}]])
    other = site.script([[{"text": "from its own file"}]], file=tmp_path / "other.json")
    assert other == tmp_path / "other.json"
    own = crab(site, "run", "-m", f"fake/{other}", "hello")
    assert own.returncode == 0, own.stderr
    assert own.stdout.strip() == "from its own file"
    default = crab(site, "run", "-m", "fake/script", "hello")
    assert default.stdout.strip() == "from the site's script", default.stderr
    assert [r["model"] for r in site.requests()] == [str(other), "script"]
    assert site.requests()[0]["messages"][-1]["content"] == "hello"


def test_a_looping_script_starts_over_and_a_plain_one_runs_out(tmp_path: Path) -> None:
    site = ScriptedSite(tmp_path)
    looping = site.script([[{"tool": "nothing_here"}]], loop=True)
    assert json.loads(looping.read_text())["loop"] is True
    # the one reply asks for a tool again and again: only the iteration limit ends the turn
    looped = crab(site, "run", "--yolo", "--set", "crab.max_iterations=3", "-m", "fake/script", "go")
    calls = len(site.requests())
    assert calls >= 3 and "the script has no reply" not in looped.stdout + looped.stderr
    site.script([[{"tool": "nothing_here"}]])
    ran_out = crab(site, "run", "--yolo", "--set", "crab.max_iterations=3", "-m", "fake/script", "go")
    assert len(site.requests()) == calls + 2  # the second call found no reply
    assert "the script has no reply for model call 2 (it has 1)" in ran_out.stdout + ran_out.stderr


def test_a_missing_script_file_is_one_config_line(tmp_path: Path) -> None:
    site = ScriptedSite(tmp_path)
    done = crab(site, "run", "-m", f"fake/{tmp_path / 'absent.json'}", "hello")
    assert done.returncode == 2
    assert f"fake: no script at {tmp_path / 'absent.json'}" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_bad_script_fails_in_the_test_not_the_subprocess(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="reply 1 step 1: expected one of"):
        ScriptedSite(tmp_path).script([[{"txet": "typo"}]], file=tmp_path / "bad.json")
    assert not (tmp_path / "bad.json").exists()
