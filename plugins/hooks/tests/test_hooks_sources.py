"""Where hooks come from: crab's table (checked before a run), Claude Code's files, and trust."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from crab import ConfigError
from crab.testing import build_host, load_config, make_config, trust_project
from crab_hooks import HooksPlugin
from crab_hooks.settings import TABLE
from crab_hooks.sources import load


def _settings(events: object = None, **more: object) -> dict[str, object]:
    values, _ = TABLE.validate({"events": events, **more} if events is not None else dict(more))
    return values


def _write(path: Path, data: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return path


def _block(command: str, event: str = "PreToolUse", matcher: str = "Bash") -> dict[str, object]:
    return {"hooks": {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}}


def test_the_users_file_and_crabs_table_are_both_read_in_order(own_home, tmp_path):
    _write(own_home / ".claude" / "settings.json", _block("from-claude"))
    events = {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "from-crab", "timeout": 5}]}]}
    hooks = load(tmp_path, make_config(cwd=tmp_path), _settings(events))
    found = hooks.commands("PreToolUse", ("Bash", "bash"))
    assert [(c.command, c.timeout) for c in found] == [("from-crab", 5.0), ("from-claude", 60.0)]
    assert hooks.notices == []


def test_claude_config_dir_moves_the_users_file(own_home, tmp_path, monkeypatch):
    elsewhere = tmp_path / "cc"
    _write(elsewhere / "settings.json", _block("moved"))
    _write(own_home / ".claude" / "settings.json", _block("home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(elsewhere))
    hooks = load(tmp_path, make_config(cwd=tmp_path), _settings())
    assert [c.command for c in hooks.commands("PreToolUse", ("Bash",))] == ["moved"]


def test_claude_settings_false_reads_no_claude_file(own_home, tmp_path):
    _write(own_home / ".claude" / "settings.json", _block("home"))
    hooks = load(tmp_path, make_config(cwd=tmp_path), _settings(claude_settings=False))
    assert hooks.commands("PreToolUse", ("Bash",)) == []


def test_the_same_command_twice_runs_once(own_home, tmp_path):
    _write(own_home / ".claude" / "settings.json", _block("same"))
    events = {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "same"}]}]}
    hooks = load(tmp_path, make_config(cwd=tmp_path), _settings(events))
    assert [c.command for c in hooks.commands("PreToolUse", ("Bash",))] == ["same"]


def test_bad_files_and_entries_are_one_line_each_and_the_rest_loads(own_home, tmp_path):
    settings = own_home / ".claude" / "settings.json"
    _write(
        settings,
        {
            "hooks": {
                "PreToolUse": [
                    {"matcher": "Bash", "hooks": [{"type": "prompt", "prompt": "is it safe?"}]},
                    {"matcher": "(", "hooks": [{"type": "command", "command": "x"}]},
                    {"matcher": "Bash", "hooks": [{"type": "command", "command": "good"}]},
                ],
                "Notification": [{"hooks": [{"type": "command", "command": "notify-send hi"}]}],
                "Stop": "not a list",
            }
        },
    )
    hooks = load(tmp_path, make_config(cwd=tmp_path), _settings())
    assert [c.command for c in hooks.commands("PreToolUse", ("Bash",))] == ["good"]
    assert hooks.notices == [
        f"{settings}: a hooks.PreToolUse hook of type 'prompt' was skipped (crab runs command and http hooks)",
        f"{settings}: hooks.PreToolUse matcher '(' is not a regular expression "
        "(missing ), unterminated subpattern at position 0)",
        f"{settings}: hooks.Stop is not a list; its hooks were not loaded",
    ]
    _write(settings, "{not json")
    hooks = load(tmp_path, make_config(cwd=tmp_path), _settings())
    [line] = hooks.notices
    assert line.startswith(f"cannot read hooks from {settings}: JSONDecodeError:") and "\n" not in line


def test_a_project_is_trusted_through_its_crab_config(own_home, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    shared = _write(project / ".claude" / "settings.json", _block("shared"))
    _write(project / ".claude" / "settings.local.json", _block("local"))
    config_file = project / ".crab" / "config.toml"
    config_file.parent.mkdir()
    config_file.write_text("")
    untrusted = load(project, load_config(cwd=project, env={}), _settings())
    assert untrusted.commands("PreToolUse", ("Bash",)) == []
    assert (
        untrusted.notices[0]
        == f"hooks in {shared} were not run: the project is not trusted; run `crab trust {project}` to run them"
    )
    trust_project(config_file)
    trusted = load(project, load_config(cwd=project, env={}), _settings())
    assert [c.command for c in trusted.commands("PreToolUse", ("Bash",))] == ["shared", "local"]
    assert trusted.commands("PreToolUse", ("Bash",))[0].project_dir == project
    config_file.write_text("# edited\n")  # editing the trusted file makes the project untrusted again
    changed = load(project, load_config(cwd=project, env={}), _settings())
    assert changed.commands("PreToolUse", ("Bash",)) == []
    assert f"{config_file} changed since you trusted the project; run `crab trust {project}`" in changed.notices[0]


def test_an_http_hook_an_async_hook_and_an_if_filter_load(own_home):
    settings = own_home / ".claude" / "settings.json"
    http_hook = {"type": "http", "url": "http://127.0.0.1:1/h", "headers": {"A": "$T"}, "allowedEnvVars": ["T"]}
    hooks_block = {
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        http_hook,
                        {"type": "command", "if": "Bash(git *)", "command": "only-for-git", "async": True},
                    ],
                }
            ],
            "SessionEnd": [{"hooks": [{"type": "command", "command": "bye", "timeout": 5}]}],
        }
    }
    _write(settings, hooks_block)
    hooks = load(own_home, make_config(cwd=own_home), _settings())
    http, git = hooks.commands("PostToolUse", ("Bash",))
    assert (http.kind, http.command) == ("http", "http://127.0.0.1:1/h")
    assert (http.headers, http.allowed_env) == ((("A", "$T"),), ("T",))
    assert (git.command, git.condition, git.background) == ("only-for-git", "Bash(git *)", True)
    [end] = hooks.commands("SessionEnd", ("other",))
    assert (end.command, end.timeout, end.own_timeout) == ("bye", 5.0, True)
    assert hooks.notices == []


def test_the_users_own_claude_folder_is_never_a_project(own_home):
    _write(own_home / ".claude" / "settings.json", _block("mine"))
    hooks = load(own_home, make_config(cwd=own_home), _settings())
    assert [c.command for c in hooks.commands("PreToolUse", ("Bash",))] == ["mine"]
    assert hooks.notices == []


@pytest.mark.parametrize(
    ("events", "problem"),
    [
        ({"PreTooluse": []}, "plugins.hooks.events.PreTooluse: expected one of PreToolUse"),
        ({"Stop": {"hooks": []}}, "plugins.hooks.events.Stop: expected a list of tables"),
        ({"Stop": [{"hooks": []}]}, 'plugins.hooks.events.Stop.0.hooks: expected a list of {type = "command"'),
        (
            {"Stop": [{"hooks": [{"type": "prompt"}]}]},
            'plugins.hooks.events.Stop.0.hooks.0: expected a table with type = "command" or "http"',
        ),
        (
            {"Stop": [{"hooks": [{"type": "http", "url": "file:///etc/passwd"}]}]},
            "plugins.hooks.events.Stop.0.hooks.0.url: expected an http:// or https:// URL",
        ),
        (
            {"Stop": [{"hooks": [{"command": " "}]}]},
            "plugins.hooks.events.Stop.0.hooks.0.command: expected a shell command",
        ),
        (
            {"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]},
            "plugins.hooks.events.Stop.0.hooks.0.timeout: expected seconds > 0",
        ),
        (
            {"Stop": [{"matcher": 3, "hooks": [{"command": "x"}]}]},
            "plugins.hooks.events.Stop.0.matcher: expected a string",
        ),
    ],
)
def test_a_malformed_crab_table_is_one_line_before_anything_runs(events, problem):
    with pytest.raises(ConfigError) as raised:
        build_host({"hooks": HooksPlugin()}, make_config({"plugins.hooks.events": events}), validate=True)
    assert problem in str(raised.value)
    assert "\n" not in str(raised.value)


def test_an_untrusted_projects_crab_table_is_dropped_by_core_with_its_line(tmp_path):
    project = tmp_path / "repo"
    (project / ".crab").mkdir(parents=True)
    (project / ".crab" / "config.toml").write_text(
        '[[plugins.hooks.events.Stop]]\nhooks = [{ type = "command", command = "touch pwned" }]\n'
    )
    config = load_config(cwd=project, env={})
    build_host({"hooks": HooksPlugin()}, config, validate=True)
    assert config.plugin_settings("hooks").get("events") is None
    [line] = [n for n in config.notices() if "plugins.hooks.events" in n]
    assert f"crab trust {project}" in line


def test_no_home_folder_at_all_reads_crabs_table_and_no_claude_file(own_home, tmp_path, monkeypatch):
    # A container's arbitrary uid: no $HOME and no passwd entry, CRAB_HOME set.
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    events = {"PreToolUse": [{"matcher": "bash", "hooks": [{"type": "command", "command": "from-crab"}]}]}
    hooks = load(tmp_path, make_config(cwd=tmp_path), _settings(events))
    assert [c.command for c in hooks.commands("PreToolUse", ("bash",))] == ["from-crab"]
