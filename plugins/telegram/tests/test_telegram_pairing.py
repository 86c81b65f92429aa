"""Pairing writes the user config only, keeps what is there, and refuses a file that does not parse."""

from __future__ import annotations

import tomllib

import crab
import pytest
from crab_telegram.pairing import add_to_allowlist


def test_a_fresh_config_gets_the_table(crab_home) -> None:
    path = add_to_allowlist("42")
    assert tomllib.loads(path.read_text())["plugins"]["telegram"]["allow_from"] == ["42"]
    add_to_allowlist("42")
    add_to_allowlist("7")
    assert tomllib.loads(path.read_text())["plugins"]["telegram"]["allow_from"] == ["42", "7"]


def test_comments_and_other_keys_stay(crab_home) -> None:
    (crab_home / "config.toml").write_text('[crab]\nmodel = "m"  # mine\n\n[plugins.telegram]\nallow_from = ["1"]\n')
    path = add_to_allowlist("2")
    text = path.read_text()
    assert 'model = "m"  # mine' in text
    assert tomllib.loads(text)["plugins"]["telegram"]["allow_from"] == ["1", "2"]


def test_a_broken_file_is_left_alone(crab_home) -> None:
    broken = "[plugins.telegram\nallow_from = \n"
    (crab_home / "config.toml").write_text(broken)
    with pytest.raises(crab.ConfigError, match="does not parse"):
        add_to_allowlist("2")
    assert (crab_home / "config.toml").read_text() == broken
