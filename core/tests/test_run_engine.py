"""``crab run --engine NAME``: a turn engine a plugin offers (``crab_turn_engines``) runs the turn
from the public steps alone (``crab.steps``: ``TurnMachine`` deciding, each step carried out by a
``TurnSteps`` read from the store afresh, as a driver in another process reads it), and ``crab run``
shows it as it shows any turn; an unknown engine is one line and exit 2 naming those available."""

from __future__ import annotations

import json
from pathlib import Path

ENGINE = '''"""A turn engine that carries out each step on the session as the store holds it then."""

import crab
from crab import steps

CRAB_API = ">=0.1,<0.2"


async def stepwise(session, prompt, config):
    turn_id = "e1"
    session.emit(crab.events.TurnStarted(session.session_id, turn_id, prompt))
    first = steps.Prompt(f"{turn_id}.p0", prompt)
    machine = steps.TurnMachine(
        session.session_id,
        turn_id,
        first,
        session.messages,
        steps.StepSettings(int(config.get("crab.max_iterations", 25))),
    )
    await session.begin()
    step = machine.step
    while not isinstance(step, steps.EndTurn):
        session = await session.again()  # what the earlier steps stored, read back
        step = machine.send(await session.carry_out(step, first))
    session.emit(crab.events.TurnEnded(session.session_id, turn_id, step.stop, machine.text, None, step.error))
    return steps.TurnOutcome(step.stop, machine.text, error=step.error, turn_id=turn_id,
                             session_id=session.session_id, tool_calls=machine.tool_calls)


@crab.hookimpl
def crab_turn_engines():
    return {"stepwise": stepwise}
'''

SCRIPT = [
    [{"tool": "echo", "args": {"text": "hi"}}],
    [{"text": "all done"}],
]


def engine_env(fake_site, tmp_path: Path) -> dict[str, str]:
    env = fake_site(["scripted", "good"])
    site = Path(env["PYTHONPATH"])
    (site / "crab_fake_engine.py").write_text(ENGINE)
    dist = site / "crab_fake_engine-0.0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: crab-fake-engine\nVersion: 0.0.1\n")
    (dist / "entry_points.txt").write_text("[crab]\nengine = crab_fake_engine\n")
    env["CRAB_PLUGINS"] = "scripted,good,engine"
    return env


def script(tmp_path: Path) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": SCRIPT}))
    return str(path)


def test_a_turn_on_an_engine_shows_like_crab_run_and_stores_the_same(crab_run, fake_site, tmp_path: Path):
    env = engine_env(fake_site, tmp_path)
    model = f"scripted/{script(tmp_path)}"
    here = crab_run(["run", "-o", "jsonl", "-m", model, "go"], env, cwd=tmp_path)
    there = crab_run(["run", "--engine", "stepwise", "-o", "jsonl", "-m", model, "go"], env, cwd=tmp_path)
    assert here.returncode == 0, here.stderr
    assert there.returncode == 0, there.stderr

    def shown(stdout: str) -> list[tuple[str, str]]:
        kinds = ("tool_call", "tool_result", "turn_end")
        events = [json.loads(line) for line in stdout.splitlines()]
        return [(e["type"], e.get("name") or e.get("text") or "") for e in events if e["type"] in kinds]

    assert shown(there.stdout) == shown(here.stdout)
    assert shown(there.stdout)[-1] == ("turn_end", "all done")
    text = crab_run(["run", "--engine", "stepwise", "-m", model, "go"], env, cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "all done" in text.stdout
    document = crab_run(["run", "--engine", "stepwise", "-o", "json", "-m", model, "go"], env, cwd=tmp_path)
    answer = json.loads(document.stdout)
    assert (answer["stop"], answer["text"]) == ("end", "all done")
    assert [call["name"] for call in answer["tool_calls"]] == ["echo"]


def test_an_unknown_engine_is_one_line_naming_those_available(crab_run, fake_site, tmp_path: Path):
    env = engine_env(fake_site, tmp_path)
    ran = crab_run(["run", "--engine", "nope", "-m", f"scripted/{script(tmp_path)}", "go"], env, cwd=tmp_path)
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines() == ["crab: no turn engine 'nope': the engines available are stepwise"]
    env["CRAB_PLUGINS"] = "scripted,good"
    none = crab_run(["run", "--engine", "nope", "-m", f"scripted/{script(tmp_path)}", "go"], env, cwd=tmp_path)
    assert none.returncode == 2
    assert none.stderr.strip().splitlines() == [
        "crab: no turn engine 'nope': the engines available are none (no loaded plugin offers one)"
    ]
