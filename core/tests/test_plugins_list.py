"""``crab plugins list``: the statuses loading computes for every command, shown without typer and
without calling a hook; its arguments parsed by hand, anything else left to typer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crab._builtin.core_plugin import register_builtins
from crab._cli.plugins_cmd import BUILTINS, NOT_CALLED, list_arguments
from crab._contracts.config import Config
from crab._host.plugin_host import PluginHost


def test_the_builtins_listed_by_name_are_those_core_registers(tmp_path: Path):
    host = PluginHost(Config(data={}, user_path=tmp_path / "config.toml", project_path=None), strict=False)
    register_builtins(host)
    assert tuple(n for n, r in host.records.items() if r.status == "builtin") == BUILTINS


@pytest.mark.parametrize(
    ("args", "parsed"),
    [
        ([], (None, False)),
        (["--json"], (None, True)),
        (["--plugins", "a,b", "--json"], ("a,b", True)),
        (["--plugins=", "--json"], ("", True)),
        (["--help"], None),
        (["--plugins"], None),  # a missing value is typer's to explain
        (["--jsn"], None),
    ],
)
def test_only_the_list_s_own_options_skip_typer(args, parsed):
    assert list_arguments(args) == parsed


def test_typer_answers_what_the_fast_path_does_not(crab_run, fake_site):
    env = fake_site(["good"])
    assert "Usage: crab plugins list" in crab_run(["plugins", "list", "--help"], env).stdout
    wrong = crab_run(["plugins", "list", "--jsn"], env)
    assert wrong.returncode == 2 and "No such option" in wrong.stderr


def test_the_listing_is_the_status_a_run_computes(crab_run, fake_site, tmp_path: Path):
    # A plugin that fails as it loads fails the same way in the listing and in a run. One that
    # fails only when a hook is called (misnamed declares another plugin's table) is loaded, as
    # far as the listing can say: it names the hook and says hooks were not called; the run
    # that calls it fails it, and doctor does too.
    env = fake_site(["good", "future-api", "misnamed", "scripted"])
    env["CRAB_PLUGINS"] = "good,future-api,misnamed,scripted"
    listed = crab_run(["plugins", "list", "--json"], env)
    assert listed.returncode == 0, listed.stderr
    records = {r["name"]: r for r in json.loads(listed.stdout)}
    assert {n: r["status"] for n, r in records.items() if n in BUILTINS} == dict.fromkeys(BUILTINS, "builtin")
    assert (records["good"]["status"], records["scripted"]["status"]) == ("loaded", "loaded")
    assert "crab_tools" in records["good"]["hooks"]
    assert records["future-api"]["status"] == "failed"
    assert (records["misnamed"]["status"], records["misnamed"]["hooks"]) == ("loaded", ["crab_config_table"])
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"replies": [[{"text": "done"}]]}))
    ran = crab_run(["run", "-m", f"scripted/{script}", "go"], env, cwd=tmp_path)
    assert f"warning: plugin future-api failed: {records['future-api']['reason']}" in ran.stderr.splitlines()
    assert "warning: plugin misnamed failed: crab_config_table declared [plugins.tools-basic]" in ran.stderr
    assert "FAIL  plugin misnamed failed: crab_config_table declared" in crab_run(["doctor"], env).stdout
    text = crab_run(["plugins", "list"], env).stdout
    assert text.splitlines()[-1] == f"({NOT_CALLED})"


def test_strict_mode_lists_everything_then_exits_2_with_the_first_failure(crab_run, fake_site):
    env = fake_site(["good", "future-api"])
    env["CRAB_STRICT_PLUGINS"] = "1"
    result = crab_run(["plugins", "list"], env)
    assert result.returncode == 2
    assert "good" in result.stdout and "future-api" in result.stdout
    assert result.stderr.strip().startswith("crab: plugin future-api failed: ")
    assert len(result.stderr.strip().splitlines()) == 1


def test_an_installed_plugin_named_like_a_builtin_is_listed_as_a_run_sees_it(monkeypatch, tmp_path: Path):
    # A run keeps core's permission gate and fails the newcomer; the listing used to show both
    # a builtin "permissions" and a loaded one, with no failure.
    from importlib.metadata import EntryPoint

    from crab._cli import plugins_cmd
    from crab._host import plugin_host

    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    fake = [EntryPoint("permissions", "builtins:object", "crab.plugins")]
    monkeypatch.setattr(plugin_host, "discover_entry_points", lambda: fake)
    records, failures, _ = plugins_cmd.plugin_records("permissions")
    assert [(r.name, r.status) for r in records] == [(n, "builtin") for n in BUILTINS]
    assert len(failures) == 1 and "permissions" in failures[0] and "crab's own" in failures[0]
