"""Model fallback (docs/library.md#model-fallback): ``crab.Agent(models=[...])``, ``--model a/x,b/y``
and ``[crab] model = ["a/x", "b/y"]`` or ``"a/x, b/y"``; a failure retries cannot cure sends the
same request to the next model, the switch is a ``RetryEvent`` and the reply records (and is priced as) the model that
answered; other failures, and failures after output was streamed, do not switch."""

from __future__ import annotations

import json
import types
from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False}


class Priced(ScriptedProvider):
    def models(self) -> list[crab.ModelInfo]:
        return [crab.ModelInfo(id=self.model, provider=self.name, input_price=1_000_000.0, output_price=0.0)]


def providers(first: list, second: list) -> tuple[ScriptedProvider, ScriptedProvider, dict[str, object]]:
    a = Priced(first, name="alpha", model="big")
    b = Priced(second, name="beta", model="small")
    plugin = types.SimpleNamespace(crab_providers=crab.hookimpl(lambda config: [a, b]))
    return a, b, {"two-providers": plugin}


@pytest.mark.parametrize("kind", ["overloaded", "server", "auth", "context_overflow"])
def test_a_failure_retries_cannot_cure_goes_to_the_next_model(crab_home: Path, kind: str):
    a, b, objects = providers(
        [[{"error": "it failed", "kind": kind}]], [[{"text": "from beta"}, {"usage": {"input_tokens": 2}}]]
    )
    events: list[crab.events.Event] = []
    with crab.Agent(
        models=["alpha/big", "beta/small"], plugins=[], plugin_objects=objects, listeners=[events.append], **QUIET
    ) as agent:
        assert agent.model == "alpha/big"
        result = agent.run_sync("hello")
        history = agent.history_sync(result.session_id)
    assert result.text == "from beta" and result.ok
    assert a.requests[0].messages == b.requests[0].messages and b.requests[0].model == "small"
    retries = [e for e in events if isinstance(e, crab.events.RetryEvent)]
    assert [r.reason for r in retries] == [f"alpha/big failed ({kind}: it failed); the same request goes to beta/small"]
    reply = history[-1]
    assert isinstance(reply, crab.messages.AssistantMessage) and (reply.provider, reply.model) == ("beta", "small")
    assert result.usage.cost == pytest.approx(2.0)  # beta's prices: 2 tokens at $1 each


@pytest.mark.parametrize("kind", ["rate_limit", "invalid_request", "unknown"])
def test_other_failures_do_not_switch(crab_home: Path, kind: str):
    _a, b, objects = providers([[{"error": "no", "kind": kind}]], [[{"text": "never"}]])
    with crab.Agent(models=["alpha/big", "beta/small"], plugins=[], plugin_objects=objects, **QUIET) as agent:
        result = agent.run_sync("hello")
    assert result.stop == "error" and b.requests == []


def test_a_failure_after_output_was_streamed_does_not_switch(crab_home: Path):
    _a, b, objects = providers([[{"text": "half an ans"}, {"error": "cut", "kind": "server"}]], [[{"text": "never"}]])
    with crab.Agent(models=["alpha/big", "beta/small"], plugins=[], plugin_objects=objects, **QUIET) as agent:
        result = agent.run_sync("hello")
    assert result.stop == "error" and b.requests == []


def test_the_last_model_s_failure_is_the_turn_s(crab_home: Path):
    _a, _b, objects = providers([[{"error": "busy", "kind": "overloaded"}]], [[{"error": "down", "kind": "server"}]])
    with crab.Agent(models=["alpha/big", "beta/small"], plugins=[], plugin_objects=objects, **QUIET) as agent:
        result = agent.run_sync("hello")
    assert result.stop == "error" and "down" in (result.error or "")


def test_the_config_and_the_cli_take_several_models(crab_home: Path, fake_site, crab_run, tmp_path: Path):
    _a, _b, objects = providers([[{"error": "busy", "kind": "overloaded"}]], [[{"text": "beta here"}]])
    settings = {"crab.model": "alpha/big, beta/small"}
    with crab.Agent(plugins=[], plugin_objects=objects, settings=settings, **QUIET) as agent:
        assert agent.run_sync("hello").text == "beta here"
    # The command line: the site's scripted provider replays one script per provider, whichever
    # model: its first reply fails (the first model's call), its second answers (the next model's).
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [[{"error": "busy", "kind": "overloaded"}], [{"text": "the next one"}]]}))
    result = crab_run(["run", "-m", f"scripted/{script},scripted/{script}", "hi"], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "the next one" in result.stdout and "failed (overloaded: busy)" in result.stderr


def test_models_and_model_together_are_a_usage_error(crab_home: Path):
    with pytest.raises(crab.UsageError, match="models="):
        crab.Agent("alpha/big", models=["beta/small"], plugins=[], **QUIET)
    with pytest.raises(crab.ConfigError, match="empty model"):
        crab.Agent(models=["alpha/big", " "], plugins=[], **QUIET)


def test_the_config_takes_a_toml_list_of_models(crab_home: Path, fake_site, crab_run, tmp_path: Path):
    _a, _b, objects = providers([[{"error": "busy", "kind": "overloaded"}]], [[{"text": "beta here"}]])
    settings = {"crab.model": ["alpha/big", "beta/small"]}
    with crab.Agent(plugins=[], plugin_objects=objects, settings=settings, **QUIET) as agent:
        assert agent.model == "alpha/big" and agent.run_sync("hello").text == "beta here"
    # The real command with the list in the user's config.toml: the first model's call fails
    # (overloaded), the second model takes the same request.
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": [[{"error": "busy", "kind": "overloaded"}], [{"text": "the next one"}]]}))
    home = Path(env["CRAB_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    models = json.dumps([f"scripted/{script}", f"scripted/{script}"])  # a JSON list of strings is TOML
    (home / "config.toml").write_text(f"[crab]\nmodel = {models}\n")
    result = crab_run(["run", "hi"], env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "the next one" in result.stdout and "failed (overloaded: busy)" in result.stderr


@pytest.mark.parametrize(
    ("entries", "found"),
    [
        ('["scripted/a", 3]', "entry 2 to be one provider/model string, found 3"),
        ('["scripted/a", " "]', 'entry 2 to be one provider/model string, found " "'),
        ('["a/x, b/y", "c/z"]', 'entry 1 to be one provider/model string, found "a/x, b/y"'),
        ("[]", "expected a string or a list of provider/model strings, found []"),
    ],
    ids=["not-a-string", "empty", "two-in-one", "no-model"],
)
def test_a_model_list_with_a_bad_entry_is_one_line(fake_site, crab_run, tmp_path: Path, entries: str, found: str):
    env = fake_site(["scripted"])
    env["CRAB_PLUGINS"] = "scripted"
    home = Path(env["CRAB_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f"[crab]\nmodel = {entries}\n")
    result = crab_run(["run", "hi"], env, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "crab.model: expected " in lines[0] and found in lines[0], result.stderr
    assert "config.toml" in lines[0] and "Traceback" not in result.stderr
