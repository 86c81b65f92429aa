"""crab-subagents through the real ``crab run`` with only core, the kit and this plugin installed:
a scripted provider plugin in a site folder answers the parent and each agent from its own
script; ``-o jsonl`` carries the children's events and the roll-up, ``-o json`` the answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

PROVIDER = '''
"""A provider answering the parent and each subagent from $SUBAGENTS_TEST_SCRIPTS (JSON:
{"parent": [reply, ...], "AGENT": [reply, ...]}), each in order, the last one repeating."""

import json
import os
import re

import crab
from crab.testing import ScriptedProvider

AGENT = re.compile(r"# You are the subagent `([^`]+)`")


class Routed:
    name = "routed"

    def __init__(self):
        self.seen = {}

    def models(self):
        return [crab.ModelInfo(id="scripted", provider="routed")]

    def check(self, model):
        return None

    def stream(self, request):
        with open(os.environ["SUBAGENTS_TEST_SCRIPTS"], encoding="utf-8") as handle:
            scripts = json.load(handle)
        found = AGENT.search(request.system)
        who = found.group(1) if found else "parent"
        index = self.seen.get(who, 0)
        self.seen[who] = index + 1
        replies = scripts[who]
        return ScriptedProvider([replies[min(index, len(replies) - 1)]]).stream(request)


@crab.hookimpl
def crab_providers(config):
    return [Routed()]
'''


def crab_run(tmp_path: Path, scripts: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    site = tmp_path / "site"
    (site / "subagents_test_routed-0.0.1.dist-info").mkdir(parents=True, exist_ok=True)
    (site / "subagents_test_routed.py").write_text(PROVIDER, encoding="utf-8")
    (site / "subagents_test_routed-0.0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: subagents-test-routed\nVersion: 0.0.1\n", encoding="utf-8"
    )
    (site / "subagents_test_routed-0.0.1.dist-info" / "entry_points.txt").write_text(
        "[crab]\nrouted = subagents_test_routed\n", encoding="utf-8"
    )
    (tmp_path / "scripts.json").write_text(json.dumps(scripts), encoding="utf-8")
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir(exist_ok=True)
    (home / "agents").mkdir(parents=True, exist_ok=True)
    for name in ("alpha", "beta"):
        (home / "agents" / f"{name}.md").write_text(
            f"---\nname: {name}\ndescription: the {name} agent\ntools: Read, Grep\n---\nBe {name}.\n", encoding="utf-8"
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env.update(
        PYTHONPATH=str(site),
        CRAB_HOME=str(home),
        CRAB_PLUGINS="subagents,routed",
        SUBAGENTS_TEST_SCRIPTS=str(tmp_path / "scripts.json"),
        NO_COLOR="1",
    )
    return subprocess.run(
        [sys.executable, "-m", "crab", "run", "-m", "routed/scripted", *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def call(call_id: str, agent: str) -> dict[str, Any]:
    return {"tool": "task", "id": call_id, "args": {"description": f"ask {agent}", "prompt": "go", "agent": agent}}


SCRIPTS = {
    "parent": [
        [call("t1", "alpha"), call("t2", "beta"), {"usage": {"input_tokens": 100, "output_tokens": 10}}],
        [{"text": "alpha and beta answered"}, {"usage": {"input_tokens": 200, "output_tokens": 20}}],
    ],
    "alpha": [[{"delay": 0.1}, {"text": "alpha here"}, {"usage": {"input_tokens": 30, "output_tokens": 3}}]],
    "beta": [[{"text": "beta here"}, {"usage": {"input_tokens": 40, "output_tokens": 4}}]],
}


def test_crab_run_jsonl_carries_each_childs_events_and_the_roll_up(tmp_path: Path) -> None:
    done = crab_run(tmp_path, SCRIPTS, "-o", "jsonl", "ask both")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    children = [e for e in events if e["type"] == "child"]
    assert {e["label"] for e in children} == {"alpha", "beta"}
    assert len({e["session_id"] for e in children}) == 2
    assert {e["call_id"] for e in children} == {"t1", "t2"}
    kinds = [(e["label"], e["event"]["type"]) for e in children]
    assert ("alpha", "turn_start") in kinds and ("beta", "turn_end") in kinds
    end = events[-1]
    assert end["type"] == "turn_end" and end["text"] == "alpha and beta answered"
    assert end["usage"]["input_tokens"] == 100 + 200 + 30 + 40
    results = [e for e in events if e["type"] == "tool_result"]
    assert sorted(r["content"].split("\n")[0] for r in results) == ["alpha here", "beta here"]


def test_crab_run_json_prints_the_parents_answer_and_the_whole_usage(tmp_path: Path) -> None:
    done = crab_run(tmp_path, SCRIPTS, "-o", "json", "ask both")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["text"] == "alpha and beta answered"
    assert document["usage"]["input_tokens"] == 370
