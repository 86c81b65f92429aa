"""The ``[plugins.tools-basic]`` table through the real ``crab`` command, with only core and this
plugin: a bad value is one line and exit 2 (no tool silently vanishes), and a cloned repository's
project config cannot widen where the tools reach until the user trusts it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from crab import ConfigError
from crab.testing import load_config
from crab_tools_basic.settings import TABLE, load_settings


def crab(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(CRAB_HOME=str(home), CRAB_PLUGINS="tools-basic")
    return subprocess.run(
        [sys.executable, "-m", "crab", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("toml", "line"),
    [
        ('bash_default_timeout = "x"', 'plugins.tools-basic.bash_default_timeout: expected a number > 0, found "x"'),
        (
            "bash_default_timeout = 700",
            "plugins.tools-basic.bash_default_timeout: expected a number <= bash_max_timeout (600), found 700.0",
        ),
        ('extra_roots = "/tmp"', 'plugins.tools-basic.extra_roots: expected a list of strings, found "/tmp"'),
        ('grep_backend = "ag"', 'plugins.tools-basic.grep_backend: expected one of "auto", "rg", "python", found "ag"'),
        ('allow_hardlinks = "yes"', 'plugins.tools-basic.allow_hardlinks: expected true or false, found "yes"'),
        (
            "bash_log_retention_days = -1",
            "plugins.tools-basic.bash_log_retention_days: expected a number >= 0, found -1",
        ),
    ],
)
def test_bad_values_are_one_line_and_exit_2(tmp_path: Path, toml: str, line: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = home / "config.toml"  # the user's own file: a project's trust-only keys would be dropped first
    config.write_text(f"[plugins.tools-basic]\n{toml}\n")
    result = crab(home, tmp_path, "tools")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"crab: user config {config}: {line}\n"


def test_a_project_value_names_the_project_file(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / ".crab").mkdir(parents=True)
    config = work / ".crab" / "config.toml"
    config.write_text('[plugins.tools-basic]\nbash_default_timeout = "x"\n')
    result = crab(tmp_path / "home", work, "tools")
    assert result.returncode == 2
    assert result.stderr == (
        f'crab: project config {config}: plugins.tools-basic.bash_default_timeout: expected a number > 0, found "x"\n'
    )


def test_a_typo_warns_and_the_tools_stay(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[plugins.tools-basic]\nbash_default_timout = 5\n")
    result = crab(home, tmp_path, "config", "show")
    assert result.returncode == 0, result.stderr
    assert "bash_default_timout is not a setting of [plugins.tools-basic] (did you mean bash_default_timeout?)" in (
        result.stderr
    )
    tools = crab(home, tmp_path, "tools")
    assert tools.returncode == 0 and "bash" in tools.stdout


def test_trust_only_keys_are_declared() -> None:
    trust_only = {s.name for s in TABLE.settings if s.trust_only}
    assert trust_only == {"extra_roots", "output_dir", "allow_hardlinks"}


def test_untrusted_project_roots_do_not_reach_the_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import crab_tools_basic
    from crab.testing import build_host

    monkeypatch.setenv("CRAB_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CRAB_PLUGINS", "tools-basic")
    work = tmp_path / "work"
    (work / ".crab").mkdir(parents=True)
    (work / ".crab" / "config.toml").write_text(
        '[plugins.tools-basic]\nextra_roots = ["/"]\noutput_dir = "/"\nallow_hardlinks = true\nbash_max_timeout = 30\n'
    )
    config = load_config(cwd=work, env={})
    build_host({"tools-basic": crab_tools_basic}, config, validate=True)
    settings = load_settings(config.plugin_settings("tools-basic"), work)
    assert settings.extra_roots == ()
    assert settings.output_dir is None
    assert settings.allow_hardlinks is False
    assert settings.bash_max_timeout == 30.0  # an ordinary key applies
    assert config.ignored == [
        "plugins.tools-basic.extra_roots",
        "plugins.tools-basic.output_dir",
        "plugins.tools-basic.allow_hardlinks",
    ]

    from crab.testing import trust_project as trust

    trust(work / ".crab" / "config.toml")
    config = load_config(cwd=work, env={})
    build_host({"tools-basic": crab_tools_basic}, config, validate=True)
    assert load_settings(config.plugin_settings("tools-basic"), work).extra_roots == (Path("/"),)


def test_unchecked_tables_get_the_same_errors() -> None:
    with pytest.raises(ConfigError) as info:
        load_settings({"bash_max_timeout": "x"})
    assert str(info.value) == 'config: plugins.tools-basic.bash_max_timeout: expected a number > 0, found "x"'


def test_a_table_is_checked_once_however_many_calls_use_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crab_tools_basic import settings as module

    checks: list[object] = []
    real = module.validate_table

    def counting(table: object, raw: object) -> object:
        checks.append(raw)
        return real(table, raw)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "validate_table", counting)
    table: dict[str, object] = {"output_dir": str(tmp_path / "logs"), "extra_roots": []}
    for _ in range(5):
        assert load_settings(table, tmp_path).extra_roots == ()
    assert len(checks) == 1
    # A table changed in place is checked again, and its new values are the ones used.
    table["extra_roots"].append("more")  # type: ignore[attr-defined]
    assert load_settings(table, tmp_path).extra_roots == ((tmp_path / "more").resolve(),)
    assert len(checks) == 2
    table["bash_max_timeout"] = -1
    with pytest.raises(ConfigError):
        load_settings(table, tmp_path)


def test_settings_made_once_still_follow_the_table_the_workspace_and_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """load_settings keeps its answer only where nothing is resolved: each input still counts."""
    table: dict[str, object] = {"allow_hardlinks": True}
    first, second = tmp_path / "one", tmp_path / "two"
    assert load_settings(table, first).allow_hardlinks is True
    table["allow_hardlinks"] = False
    assert load_settings(table, first).allow_hardlinks is False
    assert load_settings({"bash_max_timeout": 5.0}, second).bash_max_timeout == 5.0
    assert load_settings({"bash_max_timeout": 7.0}, second).bash_max_timeout == 7.0
    # ~ in output_dir is expanded with $HOME as it is now.
    home_table = {"output_dir": "~/logs"}
    monkeypatch.setenv("HOME", str(tmp_path / "h1"))
    assert load_settings(home_table, first).output_dir == tmp_path / "h1" / "logs"
    monkeypatch.setenv("HOME", str(tmp_path / "h2"))
    assert load_settings(home_table, first).output_dir == tmp_path / "h2" / "logs"
    # An extra root's symlinks are followed as they are now, on every call.
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first.mkdir()
    link = first / "extra"
    link.symlink_to(tmp_path / "a")
    roots_table = {"extra_roots": ["extra"]}
    assert load_settings(roots_table, first).extra_roots == ((tmp_path / "a").resolve(),)
    link.unlink()
    link.symlink_to(tmp_path / "b")
    assert load_settings(roots_table, first).extra_roots == ((tmp_path / "b").resolve(),)
