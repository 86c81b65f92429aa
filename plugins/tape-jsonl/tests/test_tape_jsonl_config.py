"""The ``[plugins.tape-jsonl]`` table through the real ``crab`` command: ``fsync = "false"`` is an
error, not a true value, and every bad value is one line naming the file and key, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def crab(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="tape-jsonl")
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], cwd=home, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("toml", "line"),
    [
        ('fsync = "false"', 'plugins.tape-jsonl.fsync: expected true or false, found "false"'),
        ("root = 7", "plugins.tape-jsonl.root: expected a string, found 7"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(tmp_path: Path, toml: str, line: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = home / "config.toml"
    config.write_text(f"[plugins.tape-jsonl]\n{toml}\n")
    result = crab(home, "sessions", "list")
    assert result.returncode == 2
    assert result.stderr == f"crab: user config {config}: {line}\n"


def test_a_false_fsync_is_false(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crab.testing import load_config
    from crab_tape_jsonl import crab_stores

    monkeypatch.setenv("CRAB_HOME", str(tmp_path))
    (store,) = crab_stores(load_config(cwd=tmp_path, env={}, overrides={"plugins.tape-jsonl.fsync": False}))
    assert store.fsync is False  # type: ignore[attr-defined]
    (store,) = crab_stores(load_config(cwd=tmp_path, env={}, overrides={"plugins.tape-jsonl.fsync": True}))
    assert store.fsync is True  # type: ignore[attr-defined]
