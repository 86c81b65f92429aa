"""``crab.testing.make_config`` / ``build_host``: the same config on every machine, whatever the
person running the tests keeps in their own ``~/.crab/config.toml``."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab.testing import build_host, make_config


def test_the_users_own_config_file_does_not_reach_a_tests_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[crab]\nstore = "sqlite"\nmax_iterations = 3\n', encoding="utf-8")
    monkeypatch.setenv("CRAB_HOME", str(home))
    config = make_config({"crab.max_iterations": 7})
    assert config.get("crab.max_iterations") == 7
    assert config.get("crab.store") != "sqlite"
    assert build_host().config.get("crab.store") != "sqlite"
