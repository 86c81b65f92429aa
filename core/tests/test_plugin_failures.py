"""A broken plugin never breaks the CLI: each failure is one clear line, and strict mode raises."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from crab import API_VERSION
from crab.testing import run_cli

LEGACY = ["import-error", "hook-error", "garbage", "duplicate", "future-api"]
API = f"crab-core provides {API_VERSION}"
LINES = {
    "broken-import": "plugin broken-import failed: importing crab_fake_broken.import_error raised RuntimeError: "
    "this plugin is broken on purpose",
    "broken-tools": "plugin broken-tools failed: crab_tools raised ValueError: no tools today",
    "garbage": "plugin garbage failed: crab_tools returned int, expected a list of Tool",
    "duplicate": "plugin duplicate failed: its tool 'echo' was left out because plugin 'good' registers one too and "
    "comes first in CRAB_PLUGINS; list duplicate before good there to use this one, or disable one of them "
    "(crab plugins disable good or duplicate)",
    "broken-api-int": 'plugin broken-api-int failed: CRAB_API must be a version range string such as ">=0.1,<0.2", '
    "not int 2; quote it in the plugin",
    "broken-api-old": f"plugin broken-api-old failed: was written for crab plugin API <0.1 and this {API}: "
    "upgrade the plugin to a release for this API, or use an older crab-core",
    "broken-api-1x": "plugin broken-api-1x failed: was written for crab's old plugin API numbering (>=1.5,<2, "
    f'before crab-core 0.1): port it to this crab-core\'s API {API_VERSION} (docs/api.md, "Changed in 0.1") and '
    f'declare CRAB_API = ">={API_VERSION},<0.{int(API_VERSION.split(".")[1]) + 1}"',
    "broken-api-new": f"plugin broken-api-new failed: needs crab plugin API >=2.0,<3 but this {API}: upgrade "
    f"crab-core (pip install -U crab-core), or use a release of the plugin written for API {API_VERSION}",
    "broken-wrapper": "plugin broken-wrapper failed: crab_event is a hook wrapper (@hookimpl(wrapper=True)), which "
    "crab does not call: crab calls each plugin's hook on its own; make it a plain @crab.hookimpl",
    "broken-hookwrapper": "plugin broken-hookwrapper failed: crab_system_prompt is a hook wrapper "
    "(@hookimpl(hookwrapper=True)), which crab does not call: crab calls each plugin's hook on its own; make it "
    "a plain @crab.hookimpl",
}
"""Every failure found before a run starts, with the exact line each command shows."""
BROKEN = list(LINES)
REGISTRATION = ["broken-tools", "garbage", "duplicate"]
"""Of those, the ones found by calling a registration hook (``crab plugins list`` calls none)."""
LOADING = {name: line for name, line in LINES.items() if name not in REGISTRATION}
"""The ones loading finds: import, ``CRAB_API``, hook checks; every command shows them the same."""
RUNTIME = [
    "broken-event",
    "broken-before-tool",
    "broken-after-tool",
    "broken-before-model",
    "broken-prompt",
    "broken-startup",
    "broken-shutdown",
    "closing",
]
"""Plugins that fail only once a run is under way."""
EVENT_LINE = (
    "plugin broken-event failed: crab_event raised RuntimeError: observer bug "
    "(its crab_event is not called again in this run)"
)
CHECKER_LINE = (
    "plugin broken-before-tool failed: crab_before_tool_call raised RuntimeError: checker bug (the call was refused)"
)


@pytest.fixture
def broken_env(fake_site):
    env = fake_site(["good", *LEGACY, *BROKEN])
    env["CRAB_PLUGINS"] = ",".join(["good", *BROKEN])
    return env


def script(tmp_path: Path, replies: list) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": replies}))
    return str(path)


ECHO_SCRIPT = [
    [{"tool": "echo", "args": {"text": "hi"}}, {"usage": {"input_tokens": 10, "output_tokens": 5}}],
    [{"text": "done"}, {"usage": {"input_tokens": 20, "output_tokens": 6}}],
]


@pytest.fixture
def run_env(fake_site, tmp_path: Path):
    """``run_env("broken-event", ...)`` → env whose CRAB_PLUGINS is scripted, good and those."""
    made = fake_site(["scripted", "good", "channel", *BROKEN, *RUNTIME])

    def build(*names: str, strict: bool = False) -> dict[str, str]:
        env = dict(made)
        env["CRAB_PLUGINS"] = ",".join(["scripted", "good", *names])
        if strict:
            env["CRAB_STRICT_PLUGINS"] = "1"
        return env

    return build


def warnings(stderr: str) -> list[str]:
    return [line.removeprefix("warning: ") for line in stderr.splitlines() if line.startswith("warning: plugin")]


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["plugins", "list"], ["doctor"], ["tools"]])
def test_cli_keeps_working_with_broken_plugins(crab_run, broken_env, args):
    result = crab_run(args, broken_env)
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode in (0, 1), result.stderr  # doctor exits 1 because it found problems
    if args[0] == "doctor":
        assert result.returncode == 1


def test_each_loading_failure_is_one_clear_line_in_plugins_list(crab_run, broken_env):
    result = crab_run(["plugins", "list", "--json"], broken_env)
    assert result.returncode == 0, result.stderr
    records = {r["name"]: r for r in json.loads(result.stdout)}
    assert records["good"]["status"] == "loaded"
    for name, line in LOADING.items():
        assert records[name]["status"] == "failed", name
        assert f"plugin {name} failed: {records[name]['reason']}" == line, name
    # plugins list calls no hook, so what only a hook's call finds is not claimed either way;
    # the listing says so, and doctor (test_doctor_shows_the_same_lines) calls them all
    assert {records[name]["status"] for name in REGISTRATION} == {"loaded"}
    text = crab_run(["plugins", "list"], broken_env).stdout
    for line in LOADING.values():
        assert line.split(" failed: ", 1)[1] in text
    assert "`crab doctor` calls each one" in text


def test_doctor_shows_the_same_lines(crab_run, broken_env):
    result = crab_run(["doctor"], broken_env)
    failing = [line.removeprefix("FAIL  ") for line in result.stdout.splitlines() if line.startswith("FAIL  plugin")]
    assert sorted(failing) == sorted(LINES.values())


def test_tools_lists_what_works_and_names_each_failure_once(crab_run, broken_env):
    result = crab_run(["tools", "--json"], broken_env)
    tools = {t["name"]: t for t in json.loads(result.stdout)}
    assert tools["echo"]["plugin"] == "good"
    assert tools["echo"]["description"] == "Repeat the text."
    assert sorted(warnings(result.stderr)) == sorted(LINES.values())
    text = crab_run(["tools"], broken_env)
    assert sorted(warnings(text.stderr)) == sorted(LINES.values())


def test_plugins_not_chosen_name_the_real_source(crab_run, fake_site):
    env = fake_site(["good", "recorder"])
    env["CRAB_PLUGINS"] = "good"
    records = {r["name"]: r for r in json.loads(crab_run(["plugins", "list", "--json"], env).stdout)}
    assert records["recorder"]["reason"] == "not listed in CRAB_PLUGINS"
    flagged = crab_run(["plugins", "list", "--json", "--plugins", "good"], env)
    assert {r["name"]: r for r in json.loads(flagged.stdout)}["recorder"]["reason"] == "not listed in --plugins"


# --- at run time: shown once in run (text and jsonl), chat and serve -------------------------


def test_run_shows_a_registration_failure_once_and_drops_all_of_the_plugin(crab_run, run_env, tmp_path):
    env = run_env("broken-tools")
    line = LINES["broken-tools"]
    text = crab_run(["run", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], env, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert warnings(text.stderr) == [line]
    jsonl = crab_run(["run", "-o", "jsonl", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], env, cwd=tmp_path)
    notices = [e for e in map(json.loads, jsonl.stdout.splitlines()) if e["type"] == "notice"]
    assert notices == [{"v": 1, "type": "notice", "message": line, "level": "warning"}]
    # its command and its renderer are gone with it
    command = crab_run(["run", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "/brokencmd"], env, cwd=tmp_path)
    assert command.returncode == 1
    assert "unknown command /brokencmd" in command.stderr
    assert "still here" not in command.stdout
    renderer = crab_run(
        ["run", "--set", "crab.renderer=brokenrender", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"],
        env,
        cwd=tmp_path,
    )
    assert renderer.returncode == 2
    assert "no renderer named 'brokenrender'" in renderer.stderr
    assert "the failed plugin's renderer ran" not in renderer.stderr


def test_chat_and_serve_show_each_failure_once(crab_run, run_env, tmp_path):
    env = run_env("broken-tools", "channel")
    chat = crab_run(["chat", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}"], env, cwd=tmp_path, stdin="go\n")
    assert chat.returncode == 0, chat.stderr
    assert warnings(chat.stderr) == [LINES["broken-tools"]]
    inbox = tmp_path / "inbox.txt"
    inbox.write_text("hello")
    env["CRAB_FAKE_INBOX"] = str(inbox)
    serve = crab_run(
        ["serve", "one-shot", "--set", f"plugins.scripted.script={script(tmp_path, ECHO_SCRIPT)}"], env, cwd=tmp_path
    )
    assert serve.returncode == 0, serve.stderr
    assert warnings(serve.stderr) == [LINES["broken-tools"]]


def test_a_raising_observer_loses_only_that_hook(crab_run, run_env, tmp_path):
    replies = [[{"tool": "wordcount", "args": {"text": "a b c"}}], [{"text": "three"}]]
    result = crab_run(
        ["run", "-o", "jsonl", "-m", f"scripted/{script(tmp_path, replies)}", "go"], run_env("broken-event")
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 0, result.stderr
    assert [e["message"] for e in events if e["type"] == "notice"] == [EVENT_LINE]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["name"], r["content"], r["is_error"]) for r in results] == [("wordcount", "3", False)]


def test_a_raising_checker_refuses_with_its_reason(crab_run, run_env, tmp_path):
    result = crab_run(
        ["run", "-o", "json", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], run_env("broken-before-tool")
    )
    assert result.returncode == 0, result.stderr
    call = json.loads(result.stdout)["tool_calls"][0]
    assert call["is_error"] is True
    assert call["result"] == f"Refused: {CHECKER_LINE}"
    assert warnings(result.stderr) == [CHECKER_LINE]


def test_a_raising_result_hook_withholds_the_result(crab_run, run_env, tmp_path):
    result = crab_run(
        ["run", "-o", "json", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], run_env("broken-after-tool")
    )
    line = (
        "plugin broken-after-tool failed: crab_after_tool_call raised RuntimeError: scrubber bug (the call was refused)"
    )
    assert json.loads(result.stdout)["tool_calls"][0]["result"] == f"Result withheld: {line}"
    assert warnings(result.stderr) == [line]


def test_a_raising_request_hook_refuses_the_model_call(crab_run, run_env, tmp_path):
    result = crab_run(["run", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], run_env("broken-before-model"))
    line = (
        "plugin broken-before-model failed: crab_before_model_call raised RuntimeError: request checker bug "
        "(the call was refused)"
    )
    assert result.returncode == 1
    assert warnings(result.stderr) == [line]
    assert f"error: model call refused: {line}" in result.stderr.splitlines()


def test_context_startup_and_shutdown_failures(crab_run, run_env, tmp_path):
    env = run_env("broken-prompt", "broken-startup", "broken-shutdown")
    result = crab_run(
        ["run", "-o", "jsonl", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "/startcmd"], env, cwd=tmp_path
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert notices == [
        "plugin broken-startup failed: crab_startup raised ConnectionError: cannot reach the service",
        "plugin broken-shutdown failed: crab_shutdown raised OSError: could not flush "
        "(its crab_shutdown is not called again in this run)",
    ]
    assert any(e["type"] == "command_output" and "unknown command /startcmd" in e["text"] for e in events)
    ran = crab_run(["run", "-o", "jsonl", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], env, cwd=tmp_path)
    messages = [e["message"] for e in map(json.loads, ran.stdout.splitlines()) if e["type"] == "notice"]
    assert (
        "plugin broken-prompt failed: crab_system_prompt raised KeyError: 'skills' "
        "(its crab_system_prompt is not called again in this run)"
    ) in messages
    assert ran.returncode == 0


# --- strict mode: every failure is exit 2 with the same line --------------------------------


@pytest.mark.parametrize(
    ("names", "line"),
    [
        (["broken-import"], LINES["broken-import"]),
        (["broken-tools"], LINES["broken-tools"]),
        (["broken-api-int"], LINES["broken-api-int"]),
        (["broken-wrapper"], LINES["broken-wrapper"]),
        (["broken-event"], EVENT_LINE),
        (["broken-before-tool"], CHECKER_LINE),
    ],
)
def test_strict_mode_turns_every_failure_into_exit_2(crab_run, run_env, tmp_path, names, line):
    result = crab_run(["run", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], run_env(*names, strict=True))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1] == f"crab: {line}"
    assert warnings(result.stderr) == []
    assert "Traceback" not in result.stderr


def test_strict_mode_in_listing_commands(crab_run, fake_site):
    env = fake_site(["good", "garbage"])
    env["CRAB_PLUGINS"] = "good,garbage"
    env["CRAB_STRICT_PLUGINS"] = "1"
    result = crab_run(["tools"], env)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == f"crab: {LINES['garbage']}"


# --- the rest of the run ---------------------------------------------------------------------


def test_run_closes_its_renderer(crab_run, run_env, tmp_path):
    env = run_env("closing")
    result = crab_run(
        ["run", "--set", "crab.renderer=closing", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], env
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines()[-1] == "renderer closed"


def test_usage_is_reported_once_per_model_call_and_priced(crab_run, run_env, tmp_path):
    priced = ["-m", "scripted/scripted", "--set", f"plugins.scripted.script={script(tmp_path, ECHO_SCRIPT)}"]
    result = crab_run(["run", "-o", "jsonl", *priced, "go"], run_env())
    usage = [e["usage"] for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "usage"]
    # the scripted fake provider costs $1 per million input tokens and $2 per million output tokens
    assert usage == [
        {"input_tokens": 10, "output_tokens": 5, "cost": pytest.approx(20e-6)},
        {"input_tokens": 20, "output_tokens": 6, "cost": pytest.approx(32e-6)},
    ]


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


def test_a_raising_cli_hook_is_said_once_and_the_cli_works(crab_run, fake_site):
    env = fake_site(["broken-cli", "cli-extra"])
    env["CRAB_PLUGINS"] = "broken-cli,cli-extra"
    line = "plugin broken-cli failed: crab_cli raised RuntimeError: no sub-commands today"
    result = crab_run(["--help"], env)
    assert result.returncode == 0
    assert "hello-cli" in result.stdout
    assert warnings(result.stderr) == [line]
    env["CRAB_STRICT_PLUGINS"] = "1"
    strict = crab_run(["hello-cli"], env)
    assert strict.returncode == 2
    assert strict.stderr.strip() == f"crab: {line}"


def test_plugins_add_cli_subcommands(crab_run, fake_site):
    env = fake_site(["cli-extra"])
    env["CRAB_PLUGINS"] = "cli-extra"
    assert "hello-cli" in crab_run(["--help"], env).stdout
    result = crab_run(["hello-cli"], env)
    assert result.returncode == 0
    assert result.stdout.strip() == "hello from a plugin command"


def test_run_calls_no_crab_cli_and_leaves_every_command_to_the_next(crab_run, fake_site, tmp_path, monkeypatch):
    # crab run needs no plugin sub-command (crab._cli.app builds none for it): a broken crab_cli
    # costs it nothing and says nothing, and in-process the next command has all of them again.
    env = fake_site(["scripted", "broken-cli", "cli-extra"])
    env["CRAB_PLUGINS"] = "scripted,broken-cli,cli-extra"
    ran = crab_run(["run", "-m", f"scripted/{script(tmp_path, ECHO_SCRIPT)}", "go"], env, cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert warnings(ran.stderr) == []
    monkeypatch.syspath_prepend(fake_site(["cli-extra"])["PYTHONPATH"])
    monkeypatch.delitem(sys.modules, "crab_fake_cli", raising=False)
    plugin_env = {"CRAB_HOME": str(tmp_path / "home"), "CRAB_PLUGINS": "cli-extra"}
    assert run_cli("run", "--help", env=plugin_env).exit_code == 0
    listed = run_cli("--help", env=plugin_env)
    assert "hello-cli" in listed.stdout and "sessions" in listed.stdout and "chat" in listed.stdout


def test_run_cli_adds_plugin_commands_again_under_another_config(fake_site, tmp_path, monkeypatch):
    # crab_cli gets the config it was added under: a second in-process run with another home
    # must not run the first one's (crab.testing.run_cli, one worker, many tests).
    site = fake_site(["cli-config"])["PYTHONPATH"]
    monkeypatch.syspath_prepend(site)
    monkeypatch.delitem(sys.modules, "crab_fake_cli_config", raising=False)
    for n in (3, 7, 3):
        home = tmp_path / f"home{n}"
        home.mkdir(exist_ok=True)
        (home / "config.toml").write_text(f"[crab]\nmax_iterations = {n}\n")
        result = run_cli("iterations-cli", env={"CRAB_HOME": str(home), "CRAB_PLUGINS": "cli-config"})
        assert (result.exit_code, result.stdout.strip()) == (0, str(n))


def test_run_cli_adds_plugin_commands_again_when_the_same_home_changes(fake_site, tmp_path, monkeypatch):
    # One test's `crab config set` (or `crab plugins disable`) between two run_cli calls: the
    # same home and variables, another config file, so the sub-command sees the new config.
    site = fake_site(["cli-config"])["PYTHONPATH"]
    monkeypatch.syspath_prepend(site)
    monkeypatch.delitem(sys.modules, "crab_fake_cli_config", raising=False)
    env = {"CRAB_HOME": str(tmp_path), "CRAB_PLUGINS": "cli-config"}
    for n in (3, 17):
        (tmp_path / "config.toml").write_text(f"[crab]\nmax_iterations = {n}\n")
        result = run_cli("iterations-cli", env=env)
        assert (result.exit_code, result.stdout.strip()) == (0, str(n))


def test_run_cli_says_a_cli_hooks_failure_every_run_as_crab_does(fake_site, monkeypatch):
    # The second in-process run under the same config must fail strict too, not run the command.
    site = fake_site(["broken-cli", "cli-extra"])["PYTHONPATH"]
    monkeypatch.syspath_prepend(site)
    line = "plugin broken-cli failed: crab_cli raised RuntimeError: no sub-commands today"
    env = {"CRAB_PLUGINS": "broken-cli,cli-extra"}
    for _ in range(2):
        assert warnings(run_cli("hello-cli", env=env).stderr) == [line]
    for _ in range(2):
        strict = run_cli("hello-cli", env={**env, "CRAB_STRICT_PLUGINS": "1"})
        assert (strict.exit_code, strict.stderr.strip()) == (2, f"crab: {line}")


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


def test_doctor_names_the_renderer_run_would_use(crab_run, run_env):
    # core names no renderer plugin: the default is the first one a plugin offers, as in crab run
    result = crab_run(["doctor"], run_env("closing"))
    assert "ok    renderer: closing" in result.stdout.splitlines(), result.stdout


@pytest.mark.parametrize("args", [["plugins", "list"], ["doctor"]])
def test_strict_mode_lets_the_diagnostic_commands_show_every_failure(crab_run, broken_env, args):
    # They are where a user goes to find out why a strict run failed: stopping at the first
    # failure would hide the others. They still exit 2.
    broken_env["CRAB_STRICT_PLUGINS"] = "1"
    result = crab_run(args, broken_env)
    assert result.returncode == 2, result.stderr
    shown = result.stdout
    for line in (LINES if args == ["doctor"] else LOADING).values():
        assert line.removeprefix("plugin ").split(" failed: ", 1)[1] in shown, line
    assert result.stderr.strip().splitlines()[-1].startswith("crab: plugin ")
    assert "Traceback" not in result.stderr


def test_when_setup_fails_the_plugin_failures_behind_it_are_shown(crab_run, fake_site, tmp_path):
    # A provider plugin that failed to load (its kit missing, an import error) left only "no
    # provider plugin is loaded: pip install crab-provider-openai": the real reason was never shown.
    env = fake_site(["import-error"])
    env["CRAB_PLUGINS"] = "import-error"
    result = crab_run(["run", "hi"], env, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert any(line.startswith("warning: plugin import-error failed: importing") for line in lines), result.stderr
    assert lines[-1].startswith("crab: no provider plugin is loaded")
