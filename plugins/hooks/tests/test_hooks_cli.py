"""End to end through the real ``crab run`` (a subprocess): Claude Code's settings files, read as
they are, block a ``bash`` call; an untrusted project's hooks never run, a trusted one's do.

The site holds two test plugins: ``scripted`` (the scripted provider, replies from a JSON file)
and ``fakebash`` (a ``bash`` tool that answers with the command it would run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTED = """
import json, os
import crab
from crab.testing import ScriptedProvider


class Scripted:
    name = "scripted"

    def __init__(self):
        with open(os.environ["HOOKS_TEST_SCRIPT"], encoding="utf-8") as handle:
            self.engine = ScriptedProvider(json.load(handle))

    def models(self):
        return [crab.ModelInfo(id="scripted", provider="scripted")]

    def check(self, model):
        return None

    def stream(self, request):
        return self.engine.stream(request)


@crab.hookimpl
def crab_providers(config):
    return [Scripted()]
"""

FAKEBASH = '''
import crab


@crab.tool(name="bash")
def bash(command: str) -> str:
    """Say what would run."""
    return f"ran: {command}"


@crab.hookimpl
def crab_tools(config):
    return [bash]
'''


def _site(root: Path) -> Path:
    site = root / "site"
    for name, module, text in (
        ("scripted", "hooks_test_scripted", SCRIPTED),
        ("fakebash", "hooks_test_fakebash", FAKEBASH),
    ):
        dist = site / f"{module}-0.0.1.dist-info"
        dist.mkdir(parents=True)
        (site / f"{module}.py").write_text(text, encoding="utf-8")
        (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.0.1\n")
        (dist / "entry_points.txt").write_text(f"[crab]\n{name} = {module}\n")
    return site


@pytest.fixture
def crab_run(tmp_path: Path, own_home: Path):
    site = _site(tmp_path)

    def run(prompt: str, cwd: Path, script: list[object]) -> subprocess.CompletedProcess[str]:
        script_file = tmp_path / "script.json"
        script_file.write_text(json.dumps(script), encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        env.update(
            PYTHONPATH=str(site),
            HOME=str(own_home),
            CRAB_HOME=str(own_home / ".crab"),
            CRAB_PLUGINS="hooks,scripted,fakebash",
            HOOKS_TEST_SCRIPT=str(script_file),
        )
        return subprocess.run(
            [sys.executable, "-m", "crab", "run", "-o", "jsonl", prompt],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def _claude_settings(folder: Path, command: str, matcher: str = "Bash") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "settings.json"
    hooks = {"PreToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}
    path.write_text(json.dumps({"permissions": {"allow": []}, "hooks": hooks}), encoding="utf-8")
    return path


def _results(stdout: str) -> list[dict[str, object]]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [e for e in events if e.get("type") == "tool_result"]


def _notices(stdout: str) -> list[str]:
    events = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    return [str(e.get("message")) for e in events if e.get("type") == "notice"]


SCRIPT = [[{"tool": "bash", "args": {"command": "find . -name '*.md'"}}], [{"text": "I will use rg."}]]


def test_the_users_claude_code_hook_blocks_a_bash_call(crab_run, validator, own_home, tmp_path):
    _claude_settings(own_home / ".claude", validator)
    work = tmp_path / "work"
    work.mkdir()
    done = crab_run("list the markdown files", work, SCRIPT)
    assert done.returncode == 0, done.stderr
    [result] = _results(done.stdout)
    assert result["is_error"] is True
    assert "• Use 'rg --files | rg pattern' or 'rg --files -g pattern' instead of 'find -name'" in str(
        result["content"]
    )
    assert "I will use rg." in done.stdout


def test_an_untrusted_projects_hooks_never_run_and_one_line_says_how_to_trust(crab_run, hook_script, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    marker = tmp_path / "ran"
    settings = _claude_settings(
        project / ".claude", hook_script("mark", f"open({str(marker)!r}, 'w').write('x')\nsys.exit(2)\n")
    )
    (project / ".crab").mkdir()
    blocker = json.dumps(hook_script("mark2", "sys.exit(2)"))
    (project / ".crab" / "config.toml").write_text(
        f'[[plugins.hooks.events.PreToolUse]]\nmatcher = "*"\nhooks = [{{ type = "command", command = {blocker} }}]\n'
    )
    done = crab_run("list", project, SCRIPT)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    [result] = _results(done.stdout)
    assert result["is_error"] is False and result["content"] == "ran: find . -name '*.md'"
    lines = _notices(done.stdout)
    assert (
        f"hooks in {settings} were not run: the project is not trusted; run `crab trust {project}` to run them" in lines
    )
    # crab's own table in the untrusted project config: core drops it, with its one line
    assert any("plugins.hooks.events" in line and "crab trust" in line for line in lines + done.stderr.splitlines())


def test_a_trusted_projects_claude_code_hooks_run(crab_run, validator, own_home, tmp_path):
    from crab.testing import trust_project

    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    _claude_settings(project / ".claude", validator)
    config = project / ".crab" / "config.toml"
    config.parent.mkdir()
    config.write_text("")
    trust_project(config)  # into this test's CRAB_HOME (own_home set it)
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    done = crab_run("list", sub, SCRIPT)  # the nearest .claude upwards, within the repository
    assert done.returncode == 0, done.stderr
    [result] = _results(done.stdout)
    assert result["is_error"] is True and "instead of 'find -name'" in str(result["content"])


def test_a_project_without_crab_config_is_told_to_add_one(crab_run, validator, tmp_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    settings = _claude_settings(project / ".claude", validator)
    done = crab_run("list", project, SCRIPT)
    assert done.returncode == 0, done.stderr
    expected = (
        f"hooks in {settings} were not run: the project is not trusted; add {project / '.crab' / 'config.toml'} "
        f"(it may be empty) and run `crab trust {project}` to run them"
    )
    assert expected in _notices(done.stdout)
    assert _results(done.stdout)[0]["is_error"] is False


def test_session_end_stop_and_an_http_hook_run_through_the_real_command(crab_run, hook_script, own_home, tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    posted: list[dict[str, object]] = []

    class Endpoint(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            posted.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = b'{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "seen by http"}}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    seen = tmp_path / "seen.jsonl"
    record = hook_script("record", f"open({str(seen)!r}, 'a').write(json.dumps(json.load(sys.stdin)) + '\\n')\n")
    url = f"http://127.0.0.1:{server.server_address[1]}/post"
    hooks = {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "http", "url": url}]}],
        "Stop": [{"hooks": [{"type": "command", "command": record}]}],
        "SessionEnd": [{"hooks": [{"type": "command", "command": record}]}],
    }
    (own_home / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    try:
        done = crab_run("list", work, [[{"tool": "bash", "args": {"command": "ls"}}], [{"text": "all listed"}]])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(30)
    assert done.returncode == 0, done.stderr
    [result] = _results(done.stdout)
    assert result["content"] == "ran: ls\n\n[PostToolUse hook] seen by http"
    assert [p["hook_event_name"] for p in posted] == ["PostToolUse"]
    events = [json.loads(line) for line in seen.read_text().splitlines()]
    assert [e["hook_event_name"] for e in events] == ["Stop", "SessionEnd"]
    assert events[0]["last_assistant_message"] == "all listed"
    assert events[1]["reason"] == "other" and events[1]["session_id"] == events[0]["session_id"]
