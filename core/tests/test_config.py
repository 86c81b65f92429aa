"""Layered config, malformed TOML, and writes that keep comments."""

from __future__ import annotations

from pathlib import Path

import pytest
from crab._assembly.plugin_choice import select_plugins
from crab._cli.config_files import edit_config, update_plugin_lists
from crab._config.layers import load_config
from crab._contracts.errors import ConfigError


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_layers_merge_project_over_user_then_env_then_flags(crab_home: Path, tmp_path: Path):
    write(
        crab_home / "config.toml", '[crab]\nmodel = "user-model"\nprovider = "user-prov"\n[plugins.x]\na = 1\nb = 1\n'
    )
    project = tmp_path / "work"
    write(project / ".crab" / "config.toml", '[crab]\nmodel = "project-model"\n[plugins.x]\nb = 2\n')
    nested = project / "deep" / "er"
    nested.mkdir(parents=True)
    config = load_config(cwd=nested, env={})
    assert config.get("crab.model") == "project-model"
    assert config.get("crab.provider") == "user-prov"
    assert dict(config.plugin_settings("x")) == {"a": 1, "b": 2}
    assert config.project_path == project / ".crab" / "config.toml"
    config = load_config(cwd=nested, env={"CRAB_MODEL": "env-model", "CRAB_MAX_ITERATIONS": "7"})
    assert config.get("crab.model") == "env-model"
    assert config.get("crab.max_iterations") == 7
    config = load_config(cwd=nested, env={"CRAB_MODEL": "env-model"}, overrides={"crab.model": "flag-model"})
    assert config.get("crab.model") == "flag-model"


def test_malformed_toml_names_file_line_and_column(crab_home: Path):
    path = write(crab_home / "config.toml", '[crab]\nmodel = "ok"\nprovider = = "x"\n')
    with pytest.raises(ConfigError) as info:
        load_config(env={})
    message = str(info.value)
    assert message.startswith(f"{path}:3:")
    assert "\n" not in message


def test_malformed_toml_is_never_overwritten(crab_home: Path):
    text = '[plugins]\ndisabled = ["a"\n'
    path = write(crab_home / "config.toml", text)
    with pytest.raises(ConfigError):
        update_plugin_lists(path, "b", enable=False)
    with pytest.raises(ConfigError):
        edit_config(path, "crab.model", "m")
    assert path.read_text() == text


def test_bad_shapes_are_clear(crab_home: Path):
    write(crab_home / "config.toml", '[plugins]\nenabled = "tools-basic"\n')
    with pytest.raises(ConfigError) as info:
        load_config(env={})
    assert str(info.value) == (
        f"user config {crab_home / 'config.toml'}: plugins.enabled: expected a list of plugin names, "
        'like ["tools-basic"], found "tools-basic"'
    )
    write(crab_home / "config.toml", '[crab]\npermissions = "maybe"\n')
    with pytest.raises(ConfigError) as info:
        load_config(env={})
    assert str(info.value) == (
        f'user config {crab_home / "config.toml"}: crab.permissions: expected one of "ask", "yolo", '
        '"read-only", "plan", found "maybe"'
    )


COMMENTED = """# my crab setup
[crab]
model = "m"  # the usual one

[plugins]
# these load
enabled = ["a", "b"]  # keep a first
disabled = []
"""


def test_disable_and_enable_keep_comments_and_order(crab_home: Path):
    path = write(crab_home / "config.toml", COMMENTED)
    update_plugin_lists(path, "a", enable=False)
    text = path.read_text()
    assert "# my crab setup" in text
    assert "# the usual one" in text
    assert "# these load" in text
    assert "# keep a first" in text
    config = load_config(env={})
    assert config.get("plugins.enabled") == ["b"]
    assert config.get("plugins.disabled") == ["a"]
    update_plugin_lists(path, "a", enable=True)
    config = load_config(env={})
    assert config.get("plugins.enabled") == ["b", "a"]
    assert config.get("plugins.disabled") == []
    assert path.read_text().startswith('# my crab setup\n[crab]\nmodel = "m"  # the usual one\n')


def test_cli_disable_keeps_comments(crab_cli, crab_home: Path):
    path = write(crab_home / "config.toml", COMMENTED)
    result = crab_cli("plugins", "disable", "b", "--user")
    assert result.exit_code == 0, result.stderr
    assert "# keep a first" in path.read_text()
    assert load_config(env={}).get("plugins.disabled") == ["b"]


def test_cli_config_set_and_get(crab_cli, crab_home: Path):
    path = write(crab_home / "config.toml", "# top comment\n")
    assert crab_cli("config", "set", "crab.max_iterations", "9", "--user").exit_code == 0
    assert crab_cli("config", "set", "plugins.provider-openai.base_url", "http://127.0.0.1:1/v1").exit_code == 0
    assert path.read_text().startswith("# top comment\n")
    assert crab_cli("config", "get", "crab.max_iterations").stdout.strip() == "9"
    assert crab_cli("config", "get", "plugins.provider-openai.base_url").stdout.strip() == "http://127.0.0.1:1/v1"
    missing = crab_cli("config", "get", "crab.nope")
    assert missing.exit_code == 2
    assert "crab.nope is not set" in missing.stderr


def test_cli_reports_malformed_config_in_one_line(crab_cli, crab_home: Path):
    write(crab_home / "config.toml", "[crab\n")
    result = crab_cli("config", "show")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"crab: {crab_home / 'config.toml'}:1:")
    listing = crab_cli("plugins", "list")
    assert listing.exit_code == 0  # plugins list still works, and says what is wrong
    assert "invalid TOML" in listing.stderr


def test_selection_precedence():
    installed = ["b", "a", "c"]
    assert select_plugins(installed, None, env={})[0] == ["a", "b", "c"]
    assert select_plugins(installed, None, cli=["c", "a"], env={"CRAB_PLUGINS": "b"})[0] == ["c", "a"]
    assert select_plugins(installed, None, env={"CRAB_PLUGINS": ""})[0] == []
    assert select_plugins(installed, None, env={"CRAB_PLUGINS": " b , a "})[0] == ["b", "a"]


def test_overrides_never_leak_into_defaults(crab_home: Path):
    load_config(env={}, overrides={"crab.permissions": "yolo"})
    assert load_config(env={}).get("crab.permissions") == "ask"


def test_crab_config_fixture_writes_project_and_user_files(crab_config, crab_cli):
    crab_config({"crab": {"provider": "user-provider"}, "plugins": {"enabled": ["a"]}}, scope="user")
    config = crab_config({"crab": {"model": "project-model"}})
    assert config.get("crab.model") == "project-model"
    assert config.get("crab.provider") == "user-provider"
    assert crab_cli("config", "get", "plugins.enabled").stdout.strip() == '["a"]'


def test_config_show_and_get_mask_secrets(crab_cli, crab_home: Path):
    """A key in a header or under an ``api_key``-like name is printed masked, never as written."""
    write(
        crab_home / "config.toml",
        '[plugins.some-provider]\napi_key = "sk-config-secret-0123456789"\n'
        '[plugins.some-provider.headers]\nAuthorization = "Bearer hdr-secret-0123456789"\n',
    )
    shown = crab_cli("config", "show")
    as_json = crab_cli("config", "show", "--json")
    got = crab_cli("config", "get", "plugins.some-provider.headers")
    for result in (shown, as_json, got):
        assert result.exit_code == 0, result.stderr
        assert "sk-config-secret" not in result.stdout and "hdr-secret" not in result.stdout
        assert "[redacted]" in result.stdout
