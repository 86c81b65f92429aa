"""The ``[plugins.store-sqlite]`` table through the real ``crab`` command: a bad value is one line
naming the file, the key, what was expected and what was found, exit 2, before anything opens."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def crab(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="store-sqlite")
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], cwd=home, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("toml", "line"),
    [
        ('busy_timeout = "x"', 'plugins.store-sqlite.busy_timeout: expected a number >= 0, found "x"'),
        ("busy_timeout = -1", "plugins.store-sqlite.busy_timeout: expected a number >= 0, found -1"),
        ('synchronous = "off"', 'plugins.store-sqlite.synchronous: expected one of "normal", "full", found "off"'),
        ("path = 3", "plugins.store-sqlite.path: expected a string, found 3"),
    ],
)
def test_bad_values_are_one_line_and_exit_2(tmp_path: Path, toml: str, line: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = home / "config.toml"
    config.write_text(f"[plugins.store-sqlite]\n{toml}\n")
    result = crab(home, "sessions", "list")
    assert result.returncode == 2
    assert result.stderr == f"crab: user config {config}: {line}\n"
    assert not (home / "crab.db").exists()


def test_checked_values_reach_the_store(tmp_path: Path) -> None:
    from crab.testing import load_config
    from crab_store_sqlite import crab_stores

    config = load_config(cwd=tmp_path, env={}, overrides={"plugins.store-sqlite.busy_timeout": 3})
    (store,) = crab_stores(config)
    assert store.busy_timeout == 3.0  # type: ignore[attr-defined]
    assert isinstance(store.busy_timeout, float)  # type: ignore[attr-defined]


def test_sqlites_in_memory_database_as_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # ":memory:" opens SQLite's in-memory database: sessions no other crab (a resume, `crab
    # sessions`, a Temporal worker) can read, under the name of a shared store, and a WAL warning.
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[plugins.store-sqlite]\npath = ":memory:"\n')
    result = crab(home, "sessions", "list")  # opens the store; needs no provider
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and 'store = "memory"' in result.stderr, result.stderr
