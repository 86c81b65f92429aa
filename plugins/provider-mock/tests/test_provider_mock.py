"""crab-provider-mock: script files in JSON and TOML, clear errors, and a real `crab run` on a script."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from crab import ConfigError, ModelRequest
from crab.events import ErrorEvent
from crab.messages import AssistantMessage, UserMessage
from crab.testing import load_script, make_config
from crab_provider_mock.provider import ScriptFileProvider, packaged_scripts, script_path


def test_json_and_toml_scripts_load(tmp_path: Path):
    js = tmp_path / "s.json"
    js.write_text(json.dumps({"replies": [[{"text": "hi"}]], "loop": True}))
    assert load_script(str(js)) == ([[{"text": "hi"}]], True)
    toml = tmp_path / "s.toml"
    toml.write_text(
        '[[replies]]\nsteps = [{text = "one"}, {tool = "ls", args = {path = "."}}]\n\n'
        '[[replies]]\nsteps = [{text = "two"}]\n'
    )
    replies, loop = load_script(str(toml))
    assert replies == [[{"text": "one"}, {"tool": "ls", "args": {"path": "."}}], [{"text": "two"}]]
    assert loop is False


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "Expecting property name"),
        ('{"replies": [[{"txet": "typo"}]]}', "reply 1 step 1: expected one of"),
        ('{"replies": [[{"delay": "soon"}]]}', "delay must be a number"),
        ('{"replies": "nope"}', "a script is a list of replies"),
    ],
)
def test_malformed_scripts_are_one_line_config_errors(tmp_path: Path, content: str, message: str):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load_script(str(path))
    assert message in str(info.value)
    assert str(info.value).startswith(f"script {path}:")


def test_provider_needs_a_script(crab_home):
    provider = ScriptFileProvider(make_config())
    with pytest.raises(ConfigError, match=r"needs a script: try -m mock/tour .*pass -m mock/FILE"):
        provider.check("scripted")
    assert [m.id for m in provider.models()] == ["scripted", "tour"]


def test_a_packaged_name_wins_over_a_file_of_that_name(crab_home, tmp_path: Path, monkeypatch):
    # Only core and this plugin are installed here, so the tour's tools are not: the tour with
    # real tools runs in tests/test_quickstart.py and from wheels in tests/test_packaging.py.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tour").write_text("not a script")
    path = script_path(make_config(), "tour")
    assert path == packaged_scripts()["tour"] and path.is_file()
    replies, loop = load_script(str(path))
    assert [step["tool"] for reply in replies for step in reply if "tool" in step] == ["ls", "glob", "grep"]
    assert loop is True  # every message of a chat gets the tour
    assert script_path(make_config(), "tour.json") == tmp_path / "tour.json"


def test_crab_run_replays_the_script(crab_cli, tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text(
        json.dumps(
            {
                "replies": [
                    [{"text": "scripted "}, {"text": "answer"}, {"usage": {"input_tokens": 3, "output_tokens": 2}}]
                ]
            }
        )
    )
    result = crab_cli("run", "--plugins", "provider-mock", "-m", f"mock/{path}", "-o", "json", "hello")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["text"] == "scripted answer"
    assert doc["usage"] == {"input_tokens": 3, "output_tokens": 2}


def test_script_errors_exit_1_and_missing_script_exits_2(crab_cli, tmp_path: Path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [[{"error": "rate limited", "kind": "rate_limit"}]]}))
    failed = crab_cli("run", "--plugins", "provider-mock", "--provider", "mock", "--model", str(path), "x")
    assert failed.exit_code == 1
    assert "error: rate limited" in failed.stderr
    missing = crab_cli("run", "--plugins", "provider-mock", "--provider", "mock", "x")
    assert missing.exit_code == 2
    assert "the mock provider needs a script" in missing.stderr


def test_a_script_that_is_not_utf8_is_one_line_exit_2(crab_cli, tmp_path: Path):
    path = tmp_path / "latin1.json"
    path.write_bytes('{"replies": [[{"text": "caf\u00e9"}]]}'.encode("latin-1"))
    result = crab_cli("run", "--plugins", "provider-mock", "-m", f"mock/{path}", "x")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"crab: script {path} is not UTF-8 text (byte 27); save it as UTF-8"]


def test_a_missing_script_named_by_the_model_is_one_line_exit_2(crab_cli, tmp_path: Path):
    result = crab_cli("run", "--plugins", "provider-mock", "-m", f"mock/{tmp_path / 'nope.json'}", "x")
    assert result.exit_code == 2
    assert "cannot read script" in result.stderr and "Traceback" not in result.stderr


def test_doctor_takes_the_model_its_hint_names(crab_cli):
    # doctor's hint for a missing script is "try -m mock/tour": doctor itself accepts -m.
    missing = crab_cli("doctor", "--plugins", "provider-mock")
    assert "FAIL  provider: the mock provider needs a script: try -m mock/tour" in missing.stdout
    ready = crab_cli("doctor", "--plugins", "provider-mock", "-m", "mock/tour")
    assert "ok    provider: mock/tour is ready" in ready.stdout.splitlines(), ready.stdout + ready.stderr
    assert ready.exit_code == 0


def test_the_tour_answers_every_message_of_a_chat(crab_cli):
    # `crab chat -m mock/tour`: a second message used to end in "the script has no reply for
    # model call 5 (it has 4)"; the packaged tour starts over instead.
    result = crab_cli("chat", "--plugins", "provider-mock", "-m", "mock/tour", stdin="first\nsecond\n")
    assert result.exit_code == 0, result.stderr
    output = result.stdout + result.stderr
    assert "has no reply" not in output
    assert output.count("That was crab's scripted tour") == 2, output


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"replies": [[{"text": "one"}], [{"text": "two"}], [{"text": "three"}]]}))
    return path


async def _texts(provider: ScriptFileProvider, model: str, request: ModelRequest) -> str:
    from crab.events import TextDelta

    return "".join([event.text async for event in provider.stream(request) if isinstance(event, TextDelta)])


def test_pick_conversation_answers_by_the_replies_the_request_holds(crab_home, tmp_path: Path):
    # Two processes (two fresh providers) answering calls of one session: each picks the reply
    # after those the conversation holds, not the next of its own count (crab-temporal's workers).
    path = str(_script(tmp_path))
    config = make_config({"plugins.provider-mock.pick": "conversation"})
    history = [UserMessage("hi"), AssistantMessage("one"), UserMessage("again")]
    request = ModelRequest(model=path, system="", messages=tuple(history))
    assert asyncio.run(_texts(ScriptFileProvider(config), path, request)) == "two"
    assert asyncio.run(_texts(ScriptFileProvider(config), path, request)) == "two"  # a retry elsewhere: the same
    first = ModelRequest(model=path, system="", messages=(UserMessage("hi"),))
    assert asyncio.run(_texts(ScriptFileProvider(config), path, first)) == "one"
    done = (UserMessage("a"), AssistantMessage("1"), UserMessage("b"), AssistantMessage("2"), UserMessage("c"))
    past = ModelRequest(model=path, system="", messages=(*done, AssistantMessage("3"), UserMessage("d")))
    errors = asyncio.run(_events(config, past))
    assert [e.message for e in errors if isinstance(e, ErrorEvent)] == [
        "the script has no reply for model call 4 (it has 3)"
    ]


async def _events(config: Any, request: ModelRequest) -> list[Any]:
    return [event async for event in ScriptFileProvider(config).stream(request)]


def test_pick_order_keeps_counting_this_process_calls(crab_home, tmp_path: Path):
    path = str(_script(tmp_path))
    provider = ScriptFileProvider(make_config())
    request = ModelRequest(model=path, system="", messages=(UserMessage("hi"),))
    assert [asyncio.run(_texts(provider, path, request)) for _ in range(2)] == ["one", "two"]
