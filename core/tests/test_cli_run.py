"""``crab run`` end to end in a subprocess: output formats, exit codes, the gate, stdin prompts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def env(fake_site, tmp_path: Path) -> dict[str, str]:
    env = fake_site(["scripted", "files"])
    env["CRAB_PLUGINS"] = "scripted,files"
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("the notes")
    return work


def script(tmp_path: Path, replies: list) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": replies}))
    return str(path)


TOOL_SCRIPT = [
    [
        {"text": "reading "},
        {"tool": "peek", "args": {"name": "notes.txt"}},
        {"usage": {"input_tokens": 10, "output_tokens": 5}},
    ],
    [{"text": "It says: the notes"}, {"usage": {"input_tokens": 20, "output_tokens": 6}}],
]


def test_text_output_streams_the_answer_to_stdout(crab_run, env, workspace, tmp_path):
    result = crab_run(
        ["run", "-m", "scripted/" + script(tmp_path, TOOL_SCRIPT), "what do the notes say?"], env, cwd=workspace
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "reading \nIt says: the notes\n"
    assert "→ peek(name='notes.txt')" in result.stderr
    assert "✓ peek: 1 lines" in result.stderr
    assert "\033[" not in result.stdout + result.stderr  # no ANSI when not a TTY


def test_json_output_is_one_documented_object(crab_run, env, workspace, tmp_path):
    priced = f"plugins.scripted.script={script(tmp_path, TOOL_SCRIPT)}"
    result = crab_run(["run", "-o", "json", "--set", priced, "go"], env, cwd=workspace)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert set(doc) == {"v", "session_id", "stop", "text", "error", "usage", "tool_calls"}
    assert doc["v"] == 1
    assert doc["stop"] == "end"
    assert doc["text"] == "It says: the notes"
    assert doc["usage"] == {"input_tokens": 30, "output_tokens": 11, "cost": pytest.approx(30 * 1e-6 + 11 * 2e-6)}
    assert doc["tool_calls"] == [
        {"id": "call_1_0", "name": "peek", "arguments": {"name": "notes.txt"}, "is_error": False, "result": "the notes"}
    ]


def test_jsonl_output_is_one_event_per_line(crab_run, env, workspace, tmp_path):
    result = crab_run(
        ["run", "--output", "jsonl", "-m", "scripted/" + script(tmp_path, TOOL_SCRIPT), "go"], env, cwd=workspace
    )
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert all(e["v"] == 1 for e in events)
    types = [e["type"] for e in events]
    assert types[0] == "turn_start"
    assert types[-1] == "turn_end"
    assert {"text_delta", "tool_call", "tool_result", "usage"} <= set(types)
    call = next(e for e in events if e["type"] == "tool_call")
    assert call["call"] == {"id": "call_1_0", "name": "peek", "arguments": {"name": "notes.txt"}}
    end = events[-1]
    assert end["stop"] == "end"
    assert end["text"] == "It says: the notes"


def test_prompt_from_stdin(crab_run, env, workspace, tmp_path):
    replies = [[{"text": "got it"}]]
    result = crab_run(
        ["run", "-o", "json", "-m", "scripted/" + script(tmp_path, replies), "-"], env, cwd=workspace, stdin="hello\n"
    )
    assert json.loads(result.stdout)["stop"] == "end"
    empty = crab_run(["run", "-m", "scripted/" + script(tmp_path, replies), "-"], env, cwd=workspace, stdin="")
    assert empty.returncode == 2
    assert "no prompt on stdin" in empty.stderr


def test_exit_1_when_the_model_fails(crab_run, env, workspace, tmp_path):
    replies = [[{"text": "hm"}, {"error": "upstream is down", "kind": "server"}]]
    result = crab_run(["run", "-m", "scripted/" + script(tmp_path, replies), "go"], env, cwd=workspace)
    assert result.returncode == 1
    assert "error: upstream is down" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--provider", "nope", "x"], "no provider named 'nope'"),
        (["run", "x"], "scripted: pass -m scripted/FILE"),
        (["run", "-m", "scripted//no/such/file", "x"], "no such script /no/such/file"),
        (["run", "--yolo", "--read-only", "x"], "contradict"),
        (["run", "--plan", "--yolo", "x"], "--yolo and --plan contradict each other"),
        (["run", "--set", "novalue", "x"], "--set takes KEY=VALUE"),
        (["run", "--store", "nothing", "-m", "scripted/{script}", "x"], "no store named 'nothing'"),
        (["run", "--output", "yaml", "x"], "yaml"),
    ],
)
def test_exit_2_for_usage_and_config_errors(crab_run, env, workspace, tmp_path, args, message):
    args = [a.replace("{script}", script(tmp_path, [[{"text": "x"}]])) for a in args]
    result = crab_run(args, env, cwd=workspace)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_exit_2_for_malformed_config(crab_run, env, workspace):
    (workspace / ".crab").mkdir()
    (workspace / ".crab" / "config.toml").write_text("[crab]\nmodel = \n")
    result = crab_run(["run", "x"], env, cwd=workspace)
    assert result.returncode == 2
    assert f"{workspace / '.crab' / 'config.toml'}:2:" in result.stderr


@pytest.mark.parametrize("value", ["nan", "-nan", "inf"])
def test_exit_2_for_a_timeout_that_is_not_a_number_of_seconds(crab_run, env, workspace, tmp_path, value):
    # TOML has nan and inf: nan passes every bound check, and as a timeout it ended each tool call
    # at once ("timed out after nan s"), or failed a provider with no word of the key.
    (workspace / ".crab").mkdir()
    (workspace / ".crab" / "config.toml").write_text(f"[crab]\ntool_timeout = {value}\n")
    result = crab_run(["run", "-m", "scripted/" + script(tmp_path, [[{"text": "x"}]]), "x"], env, cwd=workspace)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "crab.tool_timeout: expected a number > 0 <= 86400, found" in result.stderr
    assert "Traceback" not in result.stderr


def test_exit_2_for_a_config_nested_too_deeply(crab_run, env, workspace):
    # tomllib parses nested arrays by recursion: a cloned repository's config could end every
    # crab command in that folder with a RecursionError traceback.
    (workspace / ".crab").mkdir()
    (workspace / ".crab" / "config.toml").write_text("x = " + "[" * 5000 + "]" * 5000 + "\n")
    result = crab_run(["run", "x"], env, cwd=workspace)
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"{workspace / '.crab' / 'config.toml'}: invalid TOML: nested too deeply" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("depth", [900, 100_000])
def test_arguments_nested_too_deeply_go_back_to_the_model(crab_run, env, workspace, tmp_path, depth):
    # json.loads recurses, and so does what walks the arguments later: a confused model's "[[[[…"
    # ended the turn as a provider failure (RecursionError).
    deep = '{"name": ' + "[" * depth + "]" * depth + "}"
    replies = [[{"tool": "peek", "raw_args": deep}], [{"text": "sorry"}]]
    result = crab_run(["run", "-o", "json", "-m", "scripted/" + script(tmp_path, replies), "x"], env, cwd=workspace)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["text"] == "sorry"
    assert "nested more than 100 levels deep" in document["tool_calls"][0]["result"]


def test_exit_130_when_interrupted_and_the_turn_ends_aborted(env, workspace, tmp_path):
    replies = [[{"text": "starting"}, {"delay": 60}, {"text": "never"}]]
    process = subprocess.Popen(
        [sys.executable, "-m", "crab", "run", "-o", "jsonl", "-m", "scripted/" + script(tmp_path, replies), "go"],
        env=env,
        cwd=workspace,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if json.loads(line)["type"] == "text_delta":
            break
    os.kill(process.pid, signal.SIGINT)
    rest, _ = process.communicate(timeout=30)
    assert process.returncode == 130
    events = [json.loads(line) for line in rest.splitlines()]
    assert events[-1]["type"] == "turn_end"
    assert events[-1]["stop"] == "aborted"


def test_gate_refuses_writes_in_a_non_interactive_run(crab_run, env, workspace, tmp_path):
    replies = [[{"tool": "touch", "args": {"name": "new.txt"}}], [{"text": "could not"}]]
    result = crab_run(
        ["run", "-o", "json", "-m", "scripted/" + script(tmp_path, replies), "make a file"], env, cwd=workspace
    )
    assert result.returncode == 0
    call = json.loads(result.stdout)["tool_calls"][0]
    assert call["is_error"] is True
    assert "cannot ask the user" in call["result"] and "--yolo" in call["result"]
    assert not (workspace / "new.txt").exists()
    allowed = crab_run(
        ["run", "--yolo", "-m", "scripted/" + script(tmp_path, replies), "make a file"], env, cwd=workspace
    )
    assert allowed.returncode == 0
    assert (workspace / "new.txt").read_text() == "touched"


def test_serve_runs_a_channel_plugin_as_a_remote_channel(crab_run, fake_site, workspace, tmp_path):
    env = fake_site(["scripted", "channel"])
    env["CRAB_PLUGINS"] = "scripted,channel"
    inbox = tmp_path / "inbox.txt"
    inbox.write_text("hello from a chat")
    env["CRAB_FAKE_INBOX"] = str(inbox)
    result = crab_run(
        ["serve", "one-shot", "-m", "scripted/" + script(tmp_path, [[{"text": "hi back"}]])], env, cwd=workspace
    )
    assert result.returncode == 0, result.stderr
    stop, text, shell_error = inbox.with_suffix(".out").read_text().split("|")
    assert (stop, text) == ("end", "hi back")
    assert "only run from a local terminal" in shell_error
    unknown = crab_run(["serve", "nope", "-m", "scripted/" + script(tmp_path, [])], env, cwd=workspace)
    assert unknown.returncode == 2
    assert "no channel named 'nope'" in unknown.stderr


def test_calls_sharing_an_id_each_get_one_result_in_the_events(crab_run, env, workspace, tmp_path):
    # A provider plugin that repeats a call id (as LiteLLM's Anthropic proxy does): the loop gives
    # the later call an id of its own, so a renderer sees one result for every call, and so does the model.
    replies = [
        [
            {"tool": "peek", "args": {"name": "notes.txt"}, "id": "call_x"},
            {"tool": "peek", "args": {"name": "missing.txt"}, "id": "call_x"},
        ],
        [{"text": "done"}],
    ]
    result = crab_run(["run", "-o", "jsonl", "-m", "scripted/" + script(tmp_path, replies), "go"], env, cwd=workspace)
    assert result.returncode == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    calls = [e["call"]["id"] for e in events if e["type"] == "tool_call"]
    results = [e["call_id"] for e in events if e["type"] == "tool_result"]
    assert calls == ["call_x", "call_x_2"]
    assert sorted(results) == calls
    resumed = crab_run(
        ["run", "-c", "-o", "json", "-m", "scripted/" + script(tmp_path, [[{"text": "again"}]]), "more"],
        env,
        cwd=workspace,
    )
    assert resumed.returncode == 0, resumed.stderr
