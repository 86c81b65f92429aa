"""One hook process: stdin, exit code, capped output, and the whole process group ended on a
timeout or an abort (real subprocesses; waits are on marker files with generous deadlines)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

from crab_hooks.answers import read
from crab_hooks.runner import MAX_OUTPUT, run_hook
from crab_hooks.sources import HookCommand


def _hook(command: str, timeout: float = 30.0, root: Path = Path("/")) -> HookCommand:
    return HookCommand(command, timeout, "test", root)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _wait_for(path: Path, deadline: float = 30.0) -> None:
    end = time.monotonic() + deadline
    while not path.exists() or not path.read_text().strip():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


def test_the_event_arrives_on_stdin_and_the_project_dir_in_the_environment(hook_script, tmp_path):
    command = hook_script(
        "echo", "print(json.dumps([json.load(sys.stdin), os.environ['CLAUDE_PROJECT_DIR'], os.getcwd()]))\n"
    )
    run = asyncio.run(run_hook(_hook(command, root=tmp_path / "proj"), {"hook_event_name": "Stop", "é": "ü"}, tmp_path))
    assert run.exit_code == 0
    event, project, cwd = json.loads(run.stdout)
    assert event == {"hook_event_name": "Stop", "é": "ü"}
    assert (project, cwd) == (str(tmp_path / "proj"), str(tmp_path))


def test_output_is_capped_and_a_flood_does_not_stall(hook_script, tmp_path):
    command = hook_script(
        "flood", "sys.stdout.write('x' * (4 * 1024 * 1024)); sys.stderr.write('e' * (2 * 1024 * 1024))\nsys.exit(2)\n"
    )
    run = asyncio.run(run_hook(_hook(command), {}, tmp_path))
    assert run.exit_code == 2
    assert len(run.stdout) == MAX_OUTPUT and len(run.stderr) == MAX_OUTPUT
    answer = read(run, "PreToolUse")
    assert answer.block is not None and len(answer.block) < 10_100  # what reaches the model is cut again


def test_a_hook_that_ignores_its_input_is_fine(tmp_path):
    run = asyncio.run(run_hook(_hook("exit 0"), {"big": "y" * 1_000_000}, tmp_path))
    assert run.exit_code == 0 and not run.timed_out


def test_a_timeout_ends_the_hook_and_what_it_started(hook_script, tmp_path):
    pids = tmp_path / "pids"
    body = (
        "import subprocess, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{child.pid}}')\n"
        "time.sleep(120)\n"
    )
    started = time.monotonic()
    run = asyncio.run(run_hook(_hook(hook_script("sleeper", body), timeout=2.0), {}, tmp_path))
    assert run.timed_out and run.exit_code is None
    assert time.monotonic() - started < 30
    _wait_for(pids)
    for pid in map(int, pids.read_text().split()):
        end = time.monotonic() + 10
        while _alive(pid):
            assert time.monotonic() < end, f"{pid} outlived its hook"
            time.sleep(0.05)
    assert "timed out after 2 s and was ended" in (read(run, "Stop").notice or "")


def test_an_abort_ends_the_running_hook(hook_script, tmp_path):
    pid_file = tmp_path / "pid"
    command = hook_script(
        "waits", f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\nimport time\ntime.sleep(120)\n"
    )

    async def scenario() -> None:
        task = asyncio.create_task(run_hook(_hook(command), {}, tmp_path))
        end = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < end
            await asyncio.sleep(0.05)
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(scenario())
    pid = int(pid_file.read_text())
    end = time.monotonic() + 10
    while _alive(pid):
        assert time.monotonic() < end, "the hook outlived the abort"
        time.sleep(0.05)


def test_a_missing_folder_is_a_start_failure_not_a_traceback(tmp_path):
    run = asyncio.run(run_hook(_hook("true"), {}, tmp_path / "gone"))
    assert run.exit_code is None and run.error is not None
    notice = read(run, "PreToolUse").notice or ""
    assert notice.startswith("PreToolUse hook 'true' (test) could not start: FileNotFoundError") and "\n" not in notice


def test_plain_stdout_is_context_only_where_claude_code_makes_it_so(tmp_path):
    run = asyncio.run(run_hook(_hook("echo hello"), {}, tmp_path))
    assert read(run, "UserPromptSubmit").context == "hello"
    assert read(run, "SessionStart").context == "hello"
    assert read(run, "PreToolUse").context is None
    assert read(run, "Stop").block is None


def test_exit_two_without_stderr_still_says_who_blocked(tmp_path):
    run = asyncio.run(run_hook(_hook("echo ignored; exit 2"), {}, tmp_path))
    assert read(run, "PreToolUse").block == "blocked by the PreToolUse hook 'echo ignored; exit 2'"
    assert os.environ.get("CLAUDE_PROJECT_DIR") is None  # set for the hook only
