"""``crab replay``: a recorded session re-run with its replies played back and its tools run live."""

from __future__ import annotations

import json
import re
from pathlib import Path

from crab.testing import ScriptedProvider, load_script

READ = {"tool": "read", "args": {"path": "notes.txt"}}
PROBE = {"tool": "probe", "args": {}}
BASH = {"tool": "bash", "args": {"command": "echo replayed >> log.txt && wc -l < log.txt"}}
REPLIES = [
    [{"text": "Looking.\n"}, READ, PROBE, {"usage": {"input_tokens": 500, "output_tokens": 20}}],
    [BASH],
    [{"text": "Done."}],
]


def verdicts(stdout: str) -> dict[str, str]:
    """Call line → same/differs, by tool name."""
    found = {}
    for line in stdout.splitlines():
        match = re.match(r"\s+\d+\s+(\w+)\(.*\)\s+(same|differs)", line)
        if match:
            found[match.group(1)] = match.group(2)
    return found


def test_an_unchanged_session_replays_with_no_call_differing(crab_env):
    (crab_env.work / "notes.txt").write_text("the notes\n")
    cat = {"tool": "bash", "args": {"command": "cat notes.txt"}}
    session = crab_env.record([[READ, PROBE], [cat], [{"text": "Done."}]])
    done = crab_env.run("replay", session, "--store", "jsonl", cwd=crab_env.root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert verdicts(done.stdout) == {"read": "same", "probe": "same", "bash": "same"}
    assert done.stdout.strip().endswith("3 calls: 3 same, none differs")


def test_a_tool_whose_output_changed_is_the_one_call_that_differs(crab_env, tmp_path: Path):
    (crab_env.work / "notes.txt").write_text("the notes\n")
    pristine = tmp_path / "pristine"
    pristine.mkdir()
    (pristine / "notes.txt").write_text("the notes\n")
    (pristine / "log.txt").write_text("")
    (crab_env.work / "log.txt").write_text("")
    session = crab_env.record(REPLIES)

    same = crab_env.run("replay", session, "--store", "jsonl", "--workspace", str(pristine), cwd=crab_env.root)
    assert same.returncode == 0, same.stdout + same.stderr
    assert verdicts(same.stdout) == {"read": "same", "probe": "same", "bash": "same"}
    assert same.stdout.strip().endswith("3 calls: 3 same, none differs")

    flipped = crab_env.run(
        "replay",
        session,
        "--store",
        "jsonl",
        "--workspace",
        str(pristine),
        "--json",
        "replay.json",
        cwd=crab_env.root,
        env={"EVAL_PROBE_MODE": "flipped"},
    )
    assert flipped.returncode == 1, flipped.stdout + flipped.stderr
    assert verdicts(flipped.stdout) == {"read": "same", "probe": "differs", "bash": "same"}
    assert "- probe says steady" in flipped.stdout and "+ probe says flipped" in flipped.stdout
    assert flipped.stdout.strip().endswith("3 calls: 2 same, 1 differs")
    document = json.loads((crab_env.root / "replay.json").read_text())
    [changed] = [c for c in document["calls"] if not c["same"]]
    assert (document["differ"], changed["tool"], changed["live"]["content"]) == (1, "probe", "probe says flipped")

    focused = crab_env.run(
        "replay",
        session,
        "--store",
        "jsonl",
        "--workspace",
        str(pristine),
        "--tool",
        "read",
        cwd=crab_env.root,
        env={"EVAL_PROBE_MODE": "flipped"},
    )
    assert focused.returncode == 0 and verdicts(focused.stdout) == {"read": "same"}, focused.stdout

    first = crab_env.run(
        "replay",
        session,
        "--store",
        "jsonl",
        "--workspace",
        str(pristine),
        "--until",
        "1",
        cwd=crab_env.root,
        env={"EVAL_PROBE_MODE": "flipped"},
    )
    assert first.returncode == 0 and verdicts(first.stdout) == {"read": "same"}, first.stdout
    assert (pristine / "log.txt").read_text() == "", "the replay ran in a copy"


def test_the_replay_works_on_a_copy_unless_in_place(crab_env):
    (crab_env.work / "notes.txt").write_text("the notes\n")
    (crab_env.work / "log.txt").write_text("")
    session = crab_env.record(REPLIES)
    assert (crab_env.work / "log.txt").read_text() == "replayed\n"
    crab_env.run("replay", session, "--store", "jsonl", cwd=crab_env.root)
    assert (crab_env.work / "log.txt").read_text() == "replayed\n"
    crab_env.run("replay", session, "--store", "jsonl", "--in-place", cwd=crab_env.root)
    assert (crab_env.work / "log.txt").read_text() == "replayed\nreplayed\n"


def test_a_session_exports_as_a_script_the_scripted_provider_replays(crab_env):
    (crab_env.work / "notes.txt").write_text("the notes\n")
    session = crab_env.record(REPLIES)
    target = crab_env.root / "session-script.json"
    done = crab_env.run("replay", session, "--store", "jsonl", "--as-script", str(target))
    assert done.returncode == 0, done.stderr
    replies, loop = load_script(str(target))
    assert not loop and len(replies) == 3
    assert [s for s in replies[0] if "tool" in s] == [{**READ, "id": "call_1_0"}, {**PROBE, "id": "call_1_1"}]
    data = json.loads(target.read_text())
    assert data["prompts"] == ["go"] and data["results"][0]["call_1_1"] == {"content": "probe says steady"}
    ScriptedProvider(replies)  # a valid script for crab.testing


def test_an_exported_session_file_replays_too(crab_env):
    (crab_env.work / "notes.txt").write_text("the notes\n")
    session = crab_env.record([[READ], [{"text": "ok"}]])
    tape = crab_env.root / "tape.jsonl"
    assert crab_env.run("sessions", "export", session, "--store", "jsonl", "-o", str(tape)).returncode == 0
    done = crab_env.run("replay", str(tape), cwd=crab_env.root)
    assert done.returncode == 0 and verdicts(done.stdout) == {"read": "same"}, done.stdout + done.stderr


def test_a_config_cannot_make_the_replay_provider_drive_a_run(crab_env):
    done = crab_env.run("run", "-m", "replay/session-0123456789abcdef", "hello")
    assert done.returncode == 2
    assert "only serves a running `crab replay`" in done.stderr and "Traceback" not in done.stderr


def test_an_unknown_session_is_one_line_and_exit_2(crab_env):
    done = crab_env.run("replay", "20260101T000000-000000", "--store", "jsonl")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "cannot read session" in done.stderr


def test_a_call_refused_in_the_recording_is_refused_again_and_one_allowed_runs(crab_env):
    script = crab_env.script("asked.json", [[BASH], [{"text": "ok"}]])
    refused = crab_env.run("run", "-m", f"mock/{script}", "--store", "jsonl", "-o", "json", "go")  # no --yolo: refused
    assert refused.returncode == 0, refused.stderr
    session = json.loads(refused.stdout)["session_id"]
    done = crab_env.run("replay", session, "--store", "jsonl", cwd=crab_env.root)
    assert done.returncode == 0 and verdicts(done.stdout) == {"bash": "same"}, done.stdout
    assert not (crab_env.work / "log.txt").exists()


def test_an_exported_script_runs_as_a_plugin_test_with_crab_testing(crab_env, crab_agent, monkeypatch):
    """What a plugin author does with ``--as-script``: the real session becomes a test of their tool."""
    import importlib.util

    import crab

    session = crab_env.record([[PROBE], [PROBE], [{"text": "Done."}]])
    target = crab_env.root / "case.json"
    assert crab_env.run("replay", session, "--store", "jsonl", "--as-script", str(target)).returncode == 0
    spec = importlib.util.spec_from_file_location(
        "crab_eval_probe", Path(__file__).parent / "fake_site" / "crab_eval_probe.py"
    )
    assert spec is not None and spec.loader is not None
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)

    replies, _ = load_script(str(target))
    case = json.loads(target.read_text())
    harness = crab_agent(replies, plugins={"probe": probe})
    for prompt in case["prompts"]:
        harness.run(prompt)
    live = {e.call_id: e.content for e in harness.events if isinstance(e, crab.events.ToolResultEvent)}
    assert live == {call_id: r["content"] for call_id, r in case["results"][0].items()}

    monkeypatch.setenv("EVAL_PROBE_MODE", "changed")
    changed = crab_agent(replies, plugins={"probe": probe})
    changed.run(case["prompts"][0])
    assert {e.content for e in changed.events if isinstance(e, crab.events.ToolResultEvent)} == {"probe says changed"}


def test_a_session_file_cannot_run_commands_on_its_own_word(crab_env):
    """A file from elsewhere (a bug report's attachment) records 'allowed' for whatever it likes:
    without a terminal to ask the user, its exec calls are refused, unless --trust-recording."""
    outside = crab_env.root / "pwned"
    touch = {"tool": "bash", "args": {"command": f"touch {outside}"}}
    session = crab_env.record([[READ, touch], [{"text": "ok"}]])
    outside.unlink()
    tape = crab_env.root / "from-elsewhere.jsonl"
    assert crab_env.run("sessions", "export", session, "--store", "jsonl", "-o", str(tape)).returncode == 0
    done = crab_env.run("replay", str(tape), cwd=crab_env.root)
    assert not outside.exists(), done.stdout + done.stderr
    assert done.returncode == 1 and verdicts(done.stdout) == {"read": "same", "bash": "differs"}, done.stdout
    assert "pass --trust-recording" in done.stderr
    trusted = crab_env.run("replay", str(tape), "--trust-recording", cwd=crab_env.root)
    assert trusted.returncode == 0 and outside.exists(), trusted.stdout + trusted.stderr
    by_id = crab_env.run("replay", session, "--store", "jsonl", cwd=crab_env.root)  # the user's own store
    assert by_id.returncode == 0, by_id.stdout + by_id.stderr
