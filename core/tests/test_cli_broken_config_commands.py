"""A broken config hides the plugins' sub-commands (their ``crab_cli`` needs the config): a command
typed then is told as the config's error, one line and exit 2, not as "No such command", which
sent a user with a typo in config.toml looking for an uninstalled plugin."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def crab(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "crab", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("config", "said"),
    [("[crab]\nmodel = 3\n", "crab.model"), ("[crab\nmodel = 'x'\n", "config.toml")],
)
def test_a_command_a_broken_config_hid_is_told_the_configs_error(tmp_path: Path, config: str, said: str) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text(config)
    done = crab(tmp_path, "worker", "--help")  # crab-temporal's, or any plugin's
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.splitlines()) == 1 and said in done.stderr, done.stderr
    assert "No such command" not in done.stderr


def test_a_mistyped_command_with_a_good_config_is_still_no_such_command(tmp_path: Path) -> None:
    done = crab(tmp_path, "wrokre")
    assert done.returncode == 2
    assert "No such command 'wrokre'" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_missing_sub_command_of_crabs_own_group_is_no_such_command_even_with_a_broken_config(
    tmp_path: Path,
) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "config.toml").write_text("[crab]\nmodel = 3\n")
    done = crab(tmp_path, "sessions", "nosuch")  # crab's own group: no plugin's command is missing
    assert done.returncode == 2
    assert "No such command 'nosuch'" in done.stderr and len(done.stderr.splitlines()) == 1
