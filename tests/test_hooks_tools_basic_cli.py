"""crab-hooks beside crab-tools-basic's real tools through ``crab run`` (provider-mock replays the
model): Claude Code's bash validator example refuses the real ``bash``, and a Claude Code
``Edit`` hook's ``updatedInput`` (absolute ``file_path``, ``old_string``/``new_string``) changes
what the real ``edit`` writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

VALIDATOR = Path(__file__).parents[1] / "plugins" / "hooks" / "tests" / "scripts" / "bash_command_validator.py"
REWRITE = """
import json, sys
event = json.load(sys.stdin)
tool_input = dict(event["tool_input"])
assert event["tool_name"] == "Edit" and tool_input["file_path"].endswith("/app.py"), event
tool_input["new_string"] = tool_input["new_string"].replace("b", "b  # checked by a hook")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": tool_input}}))
"""


def _run(tmp_path: Path, replies: list[object], hooks: dict[str, object]) -> subprocess.CompletedProcess[str]:
    home, work = tmp_path / "home", tmp_path / "work"
    (home / ".claude").mkdir(parents=True, exist_ok=True)
    (home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))
    work.mkdir(exist_ok=True)
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"replies": replies}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "CLAUDE_"))}
    env.update(HOME=str(home), CRAB_HOME=str(home / ".crab"), CRAB_PLUGINS="provider-mock,tools-basic,hooks")
    return subprocess.run(
        [sys.executable, "-m", "crab", "run", "--yolo", "-m", f"mock/{script}", "-o", "jsonl", "go"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _results(stdout: str) -> list[dict[str, object]]:
    return [e for e in map(json.loads, stdout.splitlines()) if e.get("type") == "tool_result"]


def _hook(command: str, matcher: str) -> dict[str, object]:
    return {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}


def test_the_validator_example_refuses_the_real_bash(tmp_path: Path):
    marker = tmp_path / "work" / "ran"
    replies = [[{"tool": "bash", "args": {"command": f"grep -r x . ; touch {marker}"}}], [{"text": "ok"}]]
    done = _run(tmp_path, replies, _hook(f"{sys.executable} {VALIDATOR}", "Bash"))
    assert done.returncode == 0, done.stderr
    [result] = _results(done.stdout)
    assert result["is_error"] and "• Use 'rg' (ripgrep) instead of 'grep'" in str(result["content"])
    assert not marker.exists()


def test_an_edit_hooks_updated_input_is_what_the_real_edit_writes(tmp_path: Path):
    (tmp_path / "work").mkdir()
    app = tmp_path / "work" / "app.py"
    app.write_text("def add(a, b):\n    return a - b\n")
    hook = tmp_path / "rewrite.py"
    hook.write_text(REWRITE)
    replies = [
        [{"tool": "read", "args": {"path": "app.py"}}],
        [{"tool": "edit", "args": {"path": "app.py", "edits": [{"old": "return a - b", "new": "return a + b"}]}}],
        [{"text": "fixed"}],
    ]
    done = _run(tmp_path, replies, _hook(f"{sys.executable} {hook}", "Edit|MultiEdit"))
    assert done.returncode == 0, done.stderr
    assert [r["is_error"] for r in _results(done.stdout)] == [False, False], done.stdout
    assert app.read_text() == "def add(a, b):\n    return a + b  # checked by a hook\n"
