"""Declared config tables: each bad value is one line (source, key, expected, found) and exit 2;
unknown keys warn; untrusted project layers lose trust-only keys. Unit tests, then the real
``crab`` command for each symptom a user met."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from crab._config.core_tables import CORE_TABLE
from crab._config.layers import load_config, validate_table
from crab._contracts.config import Config, ConfigTable, InvalidValue, Setting
from crab._contracts.errors import ConfigError

TABLE = ConfigTable(
    "demo",
    (
        Setting("count", "int", 3, "how many", minimum=1, maximum=10),
        Setting("ratio", "float", 0.5, "how much", above=0),
        Setting("name", "str", "x", "which", choices=("x", "y")),
        Setting("on", "bool", False, "whether"),
        Setting("roots", "list[str]", [], "where", trust_only=True),
        Setting("extra", "table", {}, "more"),
        Setting("mode", "str", "low", "how wide", trust_order=("low", "mid", "high")),
    ),
)


@pytest.fixture
def crab_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("CRAB_HOME", str(home))
    return home


def test_defaults_are_filled_and_ints_become_floats() -> None:
    values = validate_table(TABLE, {"ratio": 2})
    assert values == {"count": 3, "ratio": 2.0, "name": "x", "on": False, "roots": [], "extra": {}, "mode": "low"}
    assert isinstance(values["ratio"], float)
    validate_table(TABLE, {})["roots"].append("/")  # a filled default is a copy
    assert TABLE.setting("roots").default == []  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("raw", "line"),
    [
        ({"count": 2.5}, "config: plugins.demo.count: expected a whole number >= 1 <= 10, found 2.5"),
        ({"count": True}, "config: plugins.demo.count: expected a whole number >= 1 <= 10, found true"),
        ({"count": 11}, "config: plugins.demo.count: expected a whole number >= 1 <= 10, found 11"),
        ({"ratio": 0}, "config: plugins.demo.ratio: expected a number > 0, found 0"),
        ({"ratio": "hot"}, 'config: plugins.demo.ratio: expected a number > 0, found "hot"'),
        ({"name": "z"}, 'config: plugins.demo.name: expected one of "x", "y", found "z"'),
        ({"on": "false"}, 'config: plugins.demo.on: expected true or false, found "false"'),
        ({"roots": "/tmp"}, 'config: plugins.demo.roots: expected a list of strings, found "/tmp"'),
        ({"roots": [1]}, "config: plugins.demo.roots: expected a list of strings, found [1]"),
        ({"extra": 5}, "config: plugins.demo.extra: expected a table, found 5"),
    ],
)
def test_each_bad_value_is_one_line(raw: dict[str, Any], line: str) -> None:
    with pytest.raises(InvalidValue) as info:
        validate_table(TABLE, raw)
    assert str(info.value) == line


def test_unknown_keys_are_reported_not_fatal() -> None:
    values, unknown = TABLE.validate({"cuont": 4})
    assert unknown == ["cuont"] and values["cuont"] == 4


def test_a_setting_kind_must_be_known() -> None:
    with pytest.raises(ValueError, match="kind must be one of"):
        Setting("x", "dict")  # type: ignore[arg-type]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_line_names_the_layer_the_value_came_from(crab_home: Path, tmp_path: Path) -> None:
    user = write(crab_home / "config.toml", "[crab]\nmax_iterations = 3\n")
    work = tmp_path / "work"
    project = write(work / ".crab" / "config.toml", "[crab]\ntool_timeout = -1\n")
    with pytest.raises(ConfigError) as info:
        load_config(cwd=work, env={})
    assert str(info.value) == f"project config {project}: crab.tool_timeout: expected a number > 0 <= 86400, found -1"
    write(user, '[crab]\nmax_tokens = "x"\n')
    with pytest.raises(ConfigError) as info:
        load_config(env={})
    assert str(info.value) == (
        f'user config {user}: crab.max_tokens: expected a whole number >= 1 <= 100000000, found "x"'
    )
    write(user, "")
    with pytest.raises(ConfigError) as info:
        load_config(env={"CRAB_MAX_ITERATIONS": "2.5"})
    assert str(info.value) == (
        "environment variable CRAB_MAX_ITERATIONS: crab.max_iterations: "
        "expected a whole number >= 1 <= 10000, found 2.5"
    )
    with pytest.raises(ConfigError) as info:
        load_config(env={}, overrides={"crab.temperature": "hot"})
    assert str(info.value) == '--set: crab.temperature: expected a number >= 0, found "hot"'


def test_a_non_table_is_reported_even_when_a_later_layer_sets_the_table(crab_home: Path) -> None:
    user = write(crab_home / "config.toml", "crab = 5\n")
    with pytest.raises(ConfigError) as info:
        load_config(env={}, overrides={"crab.model": "s.json"})
    assert str(info.value) == f"user config {user}: crab: expected a table, found 5"


def plugin_config(crab_home: Path, tmp_path: Path, user: str, project: str, trusted: bool = False) -> Config:
    write(crab_home / "config.toml", user)
    work = tmp_path / "work"
    path = write(work / ".crab" / "config.toml", project)
    if trusted:
        from crab._config.trust import trust

        trust(path)
    config = load_config(cwd=work, env={})
    config.resolve([TABLE])
    return config


def test_untrusted_project_loses_trust_only_and_wider_values(crab_home: Path, tmp_path: Path) -> None:
    config = plugin_config(
        crab_home,
        tmp_path,
        '[plugins.demo]\nmode = "mid"\n',
        '[plugins.demo]\nroots = ["/"]\nmode = "high"\ncount = 5\n[crab]\npermissions = "yolo"\n',
    )
    assert config.plugin_settings("demo")["roots"] == []
    assert config.plugin_settings("demo")["mode"] == "mid"  # the user's value stands
    assert config.plugin_settings("demo")["count"] == 5  # ordinary keys apply
    assert config.get("crab.permissions") == "ask"
    assert config.ignored == ["crab.permissions", "plugins.demo.roots", "plugins.demo.mode"]
    (line,) = config.notices()
    assert line.endswith(f"run `crab trust {tmp_path / 'work'}` to apply them")


def test_untrusted_project_may_narrow(crab_home: Path, tmp_path: Path) -> None:
    config = plugin_config(crab_home, tmp_path, '[plugins.demo]\nmode = "high"\n', '[plugins.demo]\nmode = "low"\n')
    assert config.plugin_settings("demo")["mode"] == "low"
    assert config.ignored == []


def test_trusted_project_applies_and_an_edit_untrusts_it(crab_home: Path, tmp_path: Path) -> None:
    project = '[plugins.demo]\nroots = ["/"]\n'
    config = plugin_config(crab_home, tmp_path, "", project, trusted=True)
    assert config.plugin_settings("demo")["roots"] == ["/"]
    assert config.trust is not None and config.trust.status == "trusted"
    write(tmp_path / "work" / ".crab" / "config.toml", project + "count = 4\n")
    config = load_config(cwd=tmp_path / "work", env={})
    config.resolve([TABLE])
    assert config.trust is not None and config.trust.status == "changed"
    assert config.plugin_settings("demo")["roots"] == []


def test_unknown_keys_warn_with_a_close_match(crab_home: Path) -> None:
    user = write(crab_home / "config.toml", "[crab]\nmax_iteration = 3\n[crabb]\nx = 1\n")
    config = load_config(env={})
    assert config.warnings == [
        f"user config {user}: crabb is not a crab setting (did you mean crab?); it is ignored",
        f"user config {user}: crab.max_iteration is not a setting of [crab] (did you mean max_iterations?); "
        "it is ignored (see `crab config keys`)",
    ]


def test_trust_filter_drops_what_the_table_says(crab_home: Path, tmp_path: Path) -> None:
    def no_url_with_key(project: Any, trusted: Any) -> list[tuple[str, ...]]:
        return [("url",)] if "url" in project and "key" in trusted else []

    table = ConfigTable(
        "net", (Setting("url", "str"), Setting("key", "str", trust_only=True)), trust_filter=no_url_with_key
    )
    write(crab_home / "config.toml", '[plugins.net]\nurl = "https://mine"\nkey = "K"\n')
    work = tmp_path / "work"
    write(work / ".crab" / "config.toml", '[plugins.net]\nurl = "https://evil"\nkey = "OTHER"\n')
    config = load_config(cwd=work, env={})
    config.resolve([table])
    assert dict(config.plugin_settings("net")) == {"url": "https://mine", "key": "K"}
    assert config.ignored == ["plugins.net.key", "plugins.net.url"]


def test_core_table_declares_every_key_core_reads() -> None:
    core = Path(__file__).resolve().parents[1] / "src" / "crab"
    import re

    read = set()
    for path in core.rglob("*.py"):
        read |= set(re.findall(r'config\.get\("crab\.([a-z_]+)"', path.read_text()))
    declared = {s.name for s in CORE_TABLE.settings}
    assert read <= declared, read - declared


# --- the real command ---------------------------------------------------------------------------


@pytest.fixture
def env(fake_site: Any) -> dict[str, str]:
    env: dict[str, str] = fake_site(["scripted", "files"])
    env["CRAB_PLUGINS"] = "scripted,files"
    return env


@pytest.mark.parametrize(
    ("toml", "line"),
    [
        ("[crab]\nprovider = 5\n", "crab.provider: expected a string, found 5"),
        ("[crab]\nmodel = 5\n", "crab.model: expected a string or a list of provider/model strings, found 5"),
        ("[crab]\nmax_iterations = 2.5\n", "crab.max_iterations: expected a whole number >= 1 <= 10000, found 2.5"),
        ('[crab]\nmax_tokens = "x"\n', 'crab.max_tokens: expected a whole number >= 1 <= 100000000, found "x"'),
        ('[crab]\ntemperature = "hot"\n', 'crab.temperature: expected a number >= 0, found "hot"'),
        ("crab = 5\n", "crab: expected a table, found 5"),
        ("[crab]\nrequest_timeout = 0\n", "crab.request_timeout: expected a number > 0 <= 86400, found 0"),
    ],
)
def test_each_bad_core_value_is_one_line_and_exit_2(
    crab_run: Any, env: dict[str, str], tmp_path: Path, toml: str, line: str
) -> None:
    work = tmp_path / "work"
    config = write(work / ".crab" / "config.toml", toml)
    script = write(tmp_path / "script.json", json.dumps({"replies": [[{"text": "hi"}]]}))
    result = crab_run(["run", "-m", f"scripted/{script}", "hi"], env, cwd=work)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"crab: project config {config}: {line}\n"


def test_a_bad_set_flag_names_the_flag(crab_run: Any, env: dict[str, str], tmp_path: Path) -> None:
    result = crab_run(["run", "--set", "crab.max_iterations=0", "hi"], env, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == "crab: --set: crab.max_iterations: expected a whole number >= 1 <= 10000, found 0\n"


def test_config_keys_lists_core_declarations(crab_run: Any, env: dict[str, str], tmp_path: Path) -> None:
    result = crab_run(["config", "keys", "--json"], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    rows = {(r["table"], r["key"]): r for r in json.loads(result.stdout)}
    assert rows["crab", "permissions"]["trust"] == "trust-only when wider"
    assert rows["crab", "request_timeout"]["default"] == 600.0
    text = crab_run(["config", "keys"], env, cwd=tmp_path).stdout
    assert text.splitlines()[0] == "[crab]  # core's own settings"


# --- a third-party plugin's declared table ------------------------------------------------------


@pytest.fixture
def third_party(fake_site: Any) -> dict[str, str]:
    env: dict[str, str] = fake_site(["scripted", "configured", "misnamed"])
    env["CRAB_PLUGINS"] = "scripted,configured,misnamed"
    return env


def settings_seen(crab_run: Any, env: dict[str, str], tmp_path: Path, cwd: Path) -> tuple[dict[str, Any], Any]:
    script = write(tmp_path / "seen.json", json.dumps({"replies": [[{"tool": "settings_seen", "args": {}}], []]}))
    result = crab_run(["run", "-o", "json", "-m", f"scripted/{script}", "go"], env, cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(json.loads(result.stdout)["tool_calls"][0]["result"]), result


def test_third_party_table_is_checked_filled_and_trust_filtered(
    crab_run: Any, third_party: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    write(work / ".crab" / "config.toml", '[plugins.configured]\ntimes = 3\nhelper_command = ["sh", "-c", "x"]\n')
    seen, result = settings_seen(crab_run, third_party, tmp_path, work)
    assert seen == {"greeting": "hello", "times": 3}  # default filled, ordinary key applied, command dropped
    assert "plugins.configured.helper_command; run `crab trust" in result.stderr
    assert "plugin misnamed failed" in result.stderr
    assert "declared [plugins.tools-basic], but the plugin is named 'misnamed'" in result.stderr

    assert crab_run(["trust"], third_party, cwd=work).returncode == 0
    seen, result = settings_seen(crab_run, third_party, tmp_path, work)
    assert seen["helper_command"] == ["sh", "-c", "x"]
    assert "trust-only" not in result.stderr


def test_third_party_bad_value_stops_before_anything_runs(
    crab_run: Any, third_party: dict[str, str], tmp_path: Path
) -> None:
    home = Path(third_party["CRAB_HOME"])
    config = write(home / "config.toml", "[plugins.configured]\ntimes = 0\n")
    script = write(tmp_path / "s.json", json.dumps({"replies": [[{"text": "hi"}]]}))
    result = crab_run(["run", "-m", f"scripted/{script}", "go"], third_party, cwd=tmp_path)
    assert result.returncode == 2
    assert (
        result.stderr
        == f"crab: user config {config}: plugins.configured.times: expected a whole number >= 1, found 0\n"
    )


def test_config_set_keeps_the_users_trust_but_not_a_strangers(
    crab_run: Any, env: dict[str, str], tmp_path: Path
) -> None:
    work = tmp_path / "work"
    config = write(work / ".crab" / "config.toml", '[crab]\npermissions = "yolo"\n')
    assert crab_run(["trust"], env, cwd=work).returncode == 0
    assert crab_run(["config", "set", "crab.max_iterations", "7"], env, cwd=work).returncode == 0
    shown = crab_run(["config", "get", "crab.permissions"], env, cwd=work)
    assert (shown.stdout, shown.stderr) == ("yolo\n", "")  # still trusted: the user made the edit

    refused = crab_run(["config", "set", "crab.max_iterations", "2.5"], env, cwd=work)
    assert refused.returncode == 2
    assert "max_iterations = 7" in config.read_text()  # put back as it was, and still trusted
    assert crab_run(["config", "get", "crab.permissions"], env, cwd=work).stdout == "yolo\n"

    config.write_text(config.read_text() + "# a line from git pull\n")
    assert crab_run(["config", "set", "crab.max_iterations", "8"], env, cwd=work).returncode == 0
    shown = crab_run(["config", "get", "crab.permissions"], env, cwd=work)
    assert shown.stdout == "ask\n"  # a stranger's edit is not blessed by the user's later one
    assert "changed since you trusted it" in shown.stderr


def test_a_table_for_no_installed_plugin_warns_once(crab_run: Any, third_party: dict[str, str], tmp_path: Path) -> None:
    # A misspelt plugin name used to be ignored without a word: the user's setting silently did nothing.
    home = Path(third_party["CRAB_HOME"])
    tables = "[plugins.configurd]\ntimes = 3\n[plugins.tools-basic]\nbash_max_timeout = 5\n"
    config = write(home / "config.toml", tables)
    script = write(tmp_path / "s.json", json.dumps({"replies": [[{"text": "hi"}]]}))
    result = crab_run(["run", "-o", "jsonl", "-m", f"scripted/{script}", "go"], third_party, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    line = (
        f"user config {config}: [plugins.configurd] is the table of no installed plugin (did you mean configured?); "
        "it is ignored (see `crab plugins list`)"
    )
    notices = [e["message"] for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "notice"]
    # tools-basic is installed (only not enabled here): its table is no typo
    assert [n for n in notices if "no installed plugin" in n] == [line]


@pytest.mark.parametrize(
    ("user", "project", "kept", "ignored"),
    [
        ("", "max_image_bytes = 104857600\n", 5 * 1024 * 1024, ["crab.max_image_bytes"]),
        ("max_image_bytes = 2000000\n", "max_image_bytes = 3000000\n", 2_000_000, ["crab.max_image_bytes"]),
        ("", "max_image_bytes = 1048576\n", 1_048_576, []),
        ("max_image_bytes = 2000000\n", "max_image_bytes = 2000000\n", 2_000_000, []),
    ],
)
def test_untrusted_project_may_lower_max_image_bytes_never_raise_it(
    crab_home: Path, tmp_path: Path, user: str, project: str, kept: int, ignored: list[str]
) -> None:
    write(crab_home / "config.toml", "[crab]\n" + user)
    work = tmp_path / "work"
    write(work / ".crab" / "config.toml", "[crab]\n" + project)
    config = load_config(cwd=work, env={})
    config.resolve([])
    assert config.get("crab.max_image_bytes") == kept
    assert config.ignored == ignored
    from crab._config.trust import trust

    trust(work / ".crab" / "config.toml")
    trusted = load_config(cwd=work, env={})
    trusted.resolve([])
    assert trusted.get("crab.max_image_bytes") == int(project.split("=")[1])


def test_plan_mode_sits_between_read_only_and_ask_for_an_untrusted_project(crab_home: Path, tmp_path: Path) -> None:
    narrowed = plugin_config(crab_home, tmp_path, "", '[crab]\npermissions = "plan"\n')
    assert narrowed.get("crab.permissions") == "plan" and narrowed.ignored == []
    widened = plugin_config(crab_home, tmp_path, '[crab]\npermissions = "plan"\n', '[crab]\npermissions = "ask"\n')
    assert widened.get("crab.permissions") == "plan" and widened.ignored == ["crab.permissions"]
    from_read_only = plugin_config(
        crab_home, tmp_path, '[crab]\npermissions = "read-only"\n', '[crab]\npermissions = "plan"\n'
    )
    assert from_read_only.get("crab.permissions") == "read-only"
