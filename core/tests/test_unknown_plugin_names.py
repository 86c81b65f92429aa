"""A plugin name that matches nothing installed: on the command line (``--plugins``) one line and
exit 2, naming the installed plugin it most likely meant; in ``CRAB_PLUGINS`` or ``[plugins]
enabled`` (a setting that outlives the command) the plugin is ``missing``, with the same hint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def test_run_with_a_misspelt_plugin_is_one_line_naming_the_near_one(crab_run: Any, fake_site: Any, tmp_path: Path):
    # Before: a "missing" warning, then "no provider plugin is loaded: pip install …" (two lines for one typo).
    env = fake_site(["scripted", "good"])
    result = crab_run(["run", "--plugins", "scriptd,good", "-m", "scripted/x.json", "hi"], env, cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == "crab: --plugins names 'scriptd', which is not installed: did you mean scripted?\n"


def test_a_name_like_nothing_installed_says_where_the_names_are(crab_run: Any, fake_site: Any, tmp_path: Path):
    env = fake_site(["scripted"])
    for args in (["run", "--plugins", "nosuchplugin", "hi"], ["plugins", "list", "--plugins", "nosuchplugin"]):
        result = crab_run(args, env, cwd=tmp_path)
        assert result.returncode == 2, args
        assert result.stderr == (
            "crab: --plugins names 'nosuchplugin', which is not installed: `crab plugins list` shows the installed "
            "ones, `crab plugins install NAME` adds one\n"
        ), args


def test_a_setting_naming_a_missing_plugin_lists_it_missing_with_the_hint(crab_run: Any, fake_site: Any):
    env = fake_site(["scripted", "good"])
    env["CRAB_PLUGINS"] = "good,scriptd"
    result = crab_run(["plugins", "list", "--json"], env)
    assert result.returncode == 0, result.stderr
    record = {r["name"]: r for r in json.loads(result.stdout)}["scriptd"]
    assert record["status"] == "missing"
    assert record["reason"] == (
        "listed in CRAB_PLUGINS but not installed: did you mean scripted? (else pip install crab-scriptd)"
    )


def test_the_variable_is_never_mistaken_for_the_flag(crab_run: Any, fake_site: Any, tmp_path: Path):
    # The sessions commands passed CRAB_PLUGINS on as if it were --plugins: a stale name in the
    # variable then stopped them, blaming a flag nobody gave.
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted,scriptd"
    result = crab_run(["sessions", "list"], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "--plugins" not in result.stderr
