"""A store or provider that is installed but not loaded: the error says so, why (not listed, disabled)
and how to load it, instead of "pip install" something already installed. Real ``crab`` with the
first-party plugins of this checkout; the library's ``plugins=`` list in-process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import crab
import pytest


def crab_cli(args: list[str], home: Path, cwd: Path, config: str) -> subprocess.CompletedProcess[str]:
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(config)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_") and not k.endswith("_API_KEY")}
    env.update(CRAB_HOME=str(home), NO_COLOR="1")
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_a_store_whose_plugin_is_not_in_enabled_says_so(tmp_path: Path) -> None:
    # Before: "no store named 'jsonl' is loaded. … Install one (pip install crab-tape-jsonl)" (it is installed).
    config = '[plugins]\nenabled = ["provider-mock", "tools-basic"]\n[crab]\nstore = "jsonl"\n'
    result = crab_cli(["run", "-m", "mock/tour", "hi"], tmp_path / "home", tmp_path, config)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "crab: no store named 'jsonl' is loaded: plugin tape-jsonl is installed but not loaded (not listed in "
        "[plugins] enabled: `crab plugins enable tape-jsonl` loads it). Loaded: memory.\n"
    )


def test_a_disabled_store_plugin_says_it_is_disabled(tmp_path: Path) -> None:
    config = '[plugins]\ndisabled = ["tape-jsonl"]\n'
    result = crab_cli(["sessions", "list", "--store", "jsonl"], tmp_path / "home", tmp_path, config)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "crab: no store named 'jsonl' is loaded: plugin tape-jsonl is installed but not loaded (disabled in "
        "config ([plugins] disabled): `crab plugins enable tape-jsonl` loads it)."
    ), result.stderr


def test_a_provider_left_out_of_plugins_is_named_with_the_flag(tmp_path: Path) -> None:
    result = crab_cli(["run", "--plugins", "tools-basic", "-m", "mock/tour", "hi"], tmp_path / "home", tmp_path, "")
    assert result.returncode == 2
    assert result.stderr == (
        "crab: no provider plugin is loaded: plugin provider-mock is installed but not loaded (not listed in "
        "--plugins: add provider-mock there)\n"
    )
    doctor = crab_cli(["doctor", "--plugins", "tools-basic", "-m", "mock/tour"], tmp_path / "home", tmp_path, "")
    assert (
        "FAIL  providers: no provider plugin is loaded: plugin provider-mock is installed but not loaded (not "
        "listed in --plugins: add provider-mock there)"
    ) in doctor.stdout.splitlines()


def test_a_program_s_empty_plugin_list_names_the_installed_providers(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Before: "no provider plugin is loaded: pip install crab-provider-openai" with provider-mock installed.
    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "home"))
    with pytest.raises(crab.ConfigError) as raised:
        crab.Agent(plugins=[], workspace=tmp_path, user_config=False, project_config=False, environment=False)
    message = str(raised.value)
    assert message.startswith("no provider plugin is loaded: plugins ")
    assert "provider-mock" in message and "pip install" not in message
    assert "are installed but not loaded (not listed in the program's plugins list: add 'provider-" in message
    with pytest.raises(crab.ConfigError) as named:
        crab.Agent(plugins=["tools-basic"], model="mock/tour", workspace=tmp_path, environment=False)
    assert str(named.value) == (
        "no provider plugin is loaded: plugin provider-mock is installed but not loaded (not listed in the "
        "program's plugins list: add 'provider-mock' to it)"
    )
