"""The composition root is the one way an agent is assembled, and it sits below the CLI."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

import crab
import pytest
from crab._assembly import root
from crab.testing import AgentHarness

SRC = Path(crab.__file__).parent
ALLOWED_CLI_IMPORTERS = {"_cli", "__main__.py"}
"""The CLI itself and ``python -m crab`` (the test kit's in-process ``run_cli`` is crab-testing's)."""


def imported_modules(path: Path) -> set[str]:
    """Every module ``path`` imports, at the top or inside functions."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_runtime_module_imports_the_cli():
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        top = path.relative_to(SRC).parts[0]
        if top in ALLOWED_CLI_IMPORTERS:
            continue
        if any(m == "crab._cli" or m.startswith("crab._cli.") for m in imported_modules(path)):
            offenders.append(str(path.relative_to(SRC)))
    assert offenders == []


def test_harness_toolbox_collect_hook_and_the_cli_build_through_the_root(
    crab_home: Path, monkeypatch: pytest.MonkeyPatch
):
    calls: list[str] = []
    real_host, real_assemble = root.assemble_host, root.assemble

    def spy_host(**kwargs: object):
        calls.append("assemble_host")
        return real_host(**kwargs)  # type: ignore[arg-type]

    def spy_assemble(**kwargs: object):
        calls.append("assemble")
        return real_assemble(**kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(root, "assemble_host", spy_host)
    monkeypatch.setattr(root, "assemble", spy_assemble)
    crab.tools.open_toolbox("")
    # Core declares no hook for plugins to collect any more (plugins declare their own): with no
    # plugin loaded, none declares this one, which collect_hook says after building the host.
    with pytest.raises(ValueError, match="crab_skill_dirs"):
        crab.hooks.collect_hook("crab_skill_dirs", plugins="")
    from crab._cli.options import RunOptions
    from crab._cli.setup import prepare

    # setup.py imported assemble by name at import time: patch the name it holds too.
    monkeypatch.setattr("crab._cli.setup.assemble", spy_assemble)
    prepare(RunOptions(plugins="provider-mock", model="mock/tour"), ask=None)
    harness_calls = len(calls)
    monkeypatch.setattr("crab.testing.harness.assemble", spy_assemble)
    AgentHarness([[{"text": "hi"}]]).close()
    assert calls[:harness_calls] == ["assemble_host", "assemble_host", "assemble", "assemble_host"]
    assert calls[harness_calls:] == ["assemble", "assemble_host"]


CTRL_C_PROGRAM = '''
import signal, sys, time
# Ctrl-C as a program in a terminal gets it: a shell without job control starts a background
# job (a CI script run with &) with SIGINT ignored, and the child would inherit that.
signal.signal(signal.SIGINT, signal.default_int_handler)
import crab
from crab.testing import ScriptedProvider

@crab.tool
def slow() -> str:
    """Take a long time."""
    {tool_setup}
    print("started", flush=True)
    time.sleep(0.05)
    for _ in range(3000):  # 300 s: far past the deadline, so only a run that abandons it passes
        time.sleep(0.1)
    return "finished"

provider = ScriptedProvider([[{{"tool": "slow", "args": {{}}}}], [{{"text": "after"}}]])
agent = crab.Agent(provider=provider, tools=[slow], plugins=[], user_config=False,
                   project_config=False, environment=False)
{main_setup}
try:
    agent.run_sync("go")
except KeyboardInterrupt:
    print("interrupted", flush=True)
[session] = agent._sync(agent.session_ids())
result = agent.run_sync("again", session=session)
paired = [type(m).__name__ for m in provider.requests[-1].messages]
print(result.stop, result.text, paired, flush=True)
agent.close()
'''


def interrupt_a_sync_tool(tmp_path: Path, *, tool_setup: str = "pass", main_setup: str = "") -> list[str]:
    """Run CTRL_C_PROGRAM, send it SIGINT once its tool runs, and return what it printed: it must
    end by itself long before the tool would (the tool's thread is abandoned, never waited for)."""
    program = CTRL_C_PROGRAM.format(tool_setup=tool_setup, main_setup=main_setup)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
    env["CRAB_HOME"] = str(tmp_path / "home")
    child = subprocess.Popen(
        [sys.executable, "-c", program],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "started"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err
    return out.splitlines()


def test_ctrl_c_during_run_sync_aborts_the_turn_and_the_session_stays_valid(tmp_path: Path):
    lines = interrupt_a_sync_tool(tmp_path)
    assert lines[0] == "interrupted"
    assert lines[1].startswith("end after ")
    assert "'ToolResultMessage'" in lines[1]


def test_ctrl_c_that_the_kernel_hands_to_the_tools_thread_still_ends_run_sync_at_once(tmp_path: Path):
    # Linux may deliver a process-wide SIGINT to any thread not blocking it, and one that lands
    # just before the main thread sleeps in epoll is as good as lost the same way: Python runs the
    # handler only when the loop wakes, which a sync tool running for minutes never makes it do.
    # SIGINT blocked in the main thread makes the kernel pick the tool's thread every time.
    lines = interrupt_a_sync_tool(
        tmp_path,
        tool_setup="signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})",
        main_setup="signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})",
    )
    assert lines[0] == "interrupted"
    assert lines[1].startswith("end after ")
    assert "'ToolResultMessage'" in lines[1]


def test_a_wakeup_fd_the_program_set_still_gets_its_signals_during_run_sync(crab_home: Path):
    # run_sync sets a wakeup fd of its own while it runs (so Ctrl-C wakes its loop); a program's
    # own (another event loop's add_signal_handler, say) must still get every byte, and be back after.
    import socket

    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    theirs.setblocking(False)
    handler = signal.signal(signal.SIGUSR2, lambda *_: None)
    previous = signal.set_wakeup_fd(theirs.fileno(), warn_on_full_buffer=False)

    @crab.tool
    def poke() -> str:
        """Signal this process."""
        os.kill(os.getpid(), signal.SIGUSR2)
        return "poked"

    provider = crab.testing.ScriptedProvider([[{"tool": "poke", "args": {}}], [{"text": "done"}]])
    try:
        with crab.Agent(provider=provider, tools=[poke], plugins=[], user_config=False, project_config=False) as agent:
            assert agent.run_sync("go").text == "done"
        assert signal.set_wakeup_fd(theirs.fileno(), warn_on_full_buffer=False) == theirs.fileno()
        assert bytes([signal.SIGUSR2]) in ours.recv(64)
    finally:
        signal.set_wakeup_fd(previous)
        signal.signal(signal.SIGUSR2, handler)
        ours.close()
        theirs.close()
