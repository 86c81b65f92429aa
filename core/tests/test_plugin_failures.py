"""A broken plugin never breaks the CLI: each failure is one clear line, and strict mode raises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crab import API_VERSION

BROKEN = ["import-error", "hook-error", "garbage", "duplicate", "future-api"]


@pytest.fixture
def broken_env(fake_site):
    env = fake_site(["good", *BROKEN])
    env["CRAB_PLUGINS"] = ",".join(["good", *BROKEN])
    return env


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["plugins", "list"], ["doctor"], ["tools"]])
def test_cli_keeps_working_with_broken_plugins(crab_run, broken_env, args):
    result = crab_run(args, broken_env)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode in (0, 1), result.stderr  # doctor exits 1 because it found problems
    if args[0] == "doctor":
        assert result.returncode == 1


def test_each_failure_is_one_clear_line(crab_run, broken_env):
    result = crab_run(["plugins", "list", "--json"], broken_env)
    assert result.returncode == 0, result.stderr
    records = {r["name"]: r for r in json.loads(result.stdout)}
    assert records["good"]["status"] == "loaded"
    reasons = {name: records[name]["reason"] for name in BROKEN}
    for name in BROKEN:
        assert records[name]["status"] == "failed", name
        assert "\n" not in reasons[name]
    assert "import failed: RuntimeError: this plugin is broken on purpose" in reasons["import-error"]
    assert "crab_tools raised ValueError: no tools today" in reasons["hook-error"]
    assert "crab_tools returned int, expected a list of Tool" in reasons["garbage"]
    assert "tool 'echo' is also registered by plugin 'good'" in reasons["duplicate"]
    assert "crab plugins disable duplicate" in reasons["duplicate"]
    assert f"needs crab plugin API >=2.0,<3, this crab has {API_VERSION}" in reasons["future-api"]


def test_the_good_plugin_still_works_beside_broken_ones(crab_run, broken_env):
    result = crab_run(["tools", "--json"], broken_env)
    tools = {t["name"]: t for t in json.loads(result.stdout)}
    assert tools["echo"]["plugin"] == "good"
    assert tools["echo"]["description"] == "Repeat the text."


def test_doctor_names_each_problem(crab_run, broken_env):
    result = crab_run(["doctor"], broken_env)
    failing = [line for line in result.stdout.splitlines() if line.startswith("FAIL  plugin")]
    assert len(failing) == len(BROKEN)


def test_strict_mode_turns_failures_into_errors(crab_run, fake_site):
    env = fake_site(["good", "garbage"])
    env["CRAB_PLUGINS"] = "good,garbage"
    env["CRAB_STRICT_PLUGINS"] = "1"
    result = crab_run(["tools"], env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("crab: plugin garbage failed: crab_tools returned int")


def test_missing_plugin_is_reported(crab_run, fake_site):
    env = fake_site(["good"])
    env["CRAB_PLUGINS"] = "good,not-there"
    result = crab_run(["plugins", "list", "--json"], env)
    records = {r["name"]: r for r in json.loads(result.stdout)}
    assert records["not-there"]["status"] == "missing"
    assert "pip install crab-not-there" in records["not-there"]["reason"]


def test_disabled_plugin_is_never_imported(crab_run, fake_site, tmp_path: Path):
    env = fake_site(["good", "recorder"])
    log = Path(env["CRAB_FAKE_IMPORT_LOG"])
    home = Path(env["CRAB_HOME"])
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('[plugins]\ndisabled = ["recorder"]\n')
    for args in (["plugins", "list"], ["tools"], ["--help"], ["doctor"]):
        crab_run(args, env)
    assert not log.exists()
    listed = json.loads(crab_run(["plugins", "list", "--json"], env).stdout)
    assert {r["name"]: r["status"] for r in listed}["recorder"] == "disabled"
    (home / "config.toml").write_text("")
    crab_run(["tools"], env)
    assert log.read_text() == "imported\n"  # the control: enabled, it is imported


def test_only_listed_plugins_load_in_config_order(crab_run, fake_site):
    env = fake_site(["good", "recorder", "cli-extra"])
    home = Path(env["CRAB_HOME"])
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text('[plugins]\nenabled = ["good"]\n')
    listed = {r["name"]: r for r in json.loads(crab_run(["plugins", "list", "--json"], env).stdout)}
    assert listed["good"]["status"] == "loaded"
    assert listed["recorder"]["status"] == "disabled"
    assert "[plugins] enabled" in listed["recorder"]["reason"]
    assert not Path(env["CRAB_FAKE_IMPORT_LOG"]).exists()


def test_plugins_add_cli_subcommands(crab_run, fake_site):
    env = fake_site(["cli-extra"])
    env["CRAB_PLUGINS"] = "cli-extra"
    assert "hello-cli" in crab_run(["--help"], env).stdout
    result = crab_run(["hello-cli"], env)
    assert result.returncode == 0
    assert result.stdout.strip() == "hello from a plugin command"


def test_override_wins_without_a_conflict():
    import types

    import crab
    from crab.testing import build_host

    @crab.tool
    def echo(text: str) -> str:
        """Original."""
        return text

    @crab.tool(name="echo", override=True)
    def loud(text: str) -> str:
        """Replacement."""
        return text.upper()

    first = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [echo]))
    second = types.SimpleNamespace(crab_tools=crab.hookimpl(lambda config: [loud]))
    host = build_host({"first": first, "second": second})
    tools = host.registry("tools")
    assert tools["echo"].description == "Replacement."
    assert tools["echo"].plugin == "second"
    assert host.problems() == []
