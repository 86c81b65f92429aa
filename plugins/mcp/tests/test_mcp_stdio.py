"""The tiny server as a real child process over stdio: failure modes, restart, env, stderr log."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from crab import ToolContext
from crab.secrets import REDACTED
from crab.tools import run_tool
from crab_mcp.manager import Manager
from crab_mcp.server import ServerLink
from crab_mcp.settings import ServerConfig, server_configs


def configs(servers: dict[str, dict[str, Any]], **table: Any) -> list[ServerConfig]:
    return server_configs({"servers": servers, **table})


def manager_for(tmp_path: Path, servers: dict[str, dict[str, Any]], environ: dict[str, str] | None = None) -> Manager:
    links = [ServerLink(c, tmp_path / "logs", environ=environ) for c in configs(servers)]
    return Manager(links)


async def call(manager: Manager, name: str, args: dict[str, Any] | None = None) -> Any:
    tool = {t.name: t for t in manager.tools()}[name]
    return await run_tool(tool, args or {}, ToolContext(session_id="s", workspace=Path.cwd()))


def test_failing_servers_are_reported_one_line_each_and_the_good_one_works(tmp_path, tiny_cmd, unfence):
    servers = {
        "good": tiny_cmd(),
        "missing": {"command": "crab-no-such-mcp-server"},
        "exits": tiny_cmd("--exit"),
        "mute": {**tiny_cmd("--mute"), "connect_timeout": 1.5},
        "notdir": {**tiny_cmd(), "cwd": str(tmp_path / "nowhere")},
    }

    async def go() -> None:
        manager = manager_for(tmp_path, servers)
        failed = await manager.start()
        try:
            assert set(failed) == {"missing", "exits", "mute", "notdir"}
            assert failed["missing"] == "command not found: crab-no-such-mcp-server (check command and PATH)"
            assert failed["exits"].startswith("the server closed the connection (it exited)")
            assert str(tmp_path / "logs" / "exits.log") in failed["exits"]
            assert failed["mute"].startswith("did not answer within 1.5 s")
            assert "nowhere is not a folder" in failed["notdir"]
            assert all("\n" not in reason for reason in failed.values())
            assert unfence((await call(manager, "good_add", {"a": 1, "b": 41})).content) == "42"
        finally:
            await manager.stop()

    asyncio.run(go())


def test_a_crash_mid_call_is_an_error_result_and_the_next_call_restarts_the_server(tmp_path, tiny_cmd):
    async def go() -> None:
        manager = manager_for(tmp_path, {"t": tiny_cmd()})
        assert await manager.start() == {}
        try:
            first = (await call(manager, "t_pid")).content
            crashed = await call(manager, "t_crash")
            assert crashed.is_error and "closed the connection during crash" in crashed.content
            assert manager.links["t"].status == "down"
            second = await call(manager, "t_pid")
            assert not second.is_error and second.content != first
            assert manager.links["t"].status == "ready"
        finally:
            await manager.stop()

    asyncio.run(go())


def test_a_server_that_exits_while_idle_is_marked_down_at_once_and_the_next_call_works(tmp_path, tiny_cmd):
    import os
    import signal
    import time

    async def go() -> None:
        manager = manager_for(tmp_path, {"t": tiny_cmd()})
        assert await manager.start() == {}
        link = manager.links["t"]
        lost: list[str] = []
        link.on_lost.append(lambda lk: lost.append(lk.status))
        try:
            first = (await call(manager, "t_pid")).content
            assert link._stdio is not None and link._stdio._process is not None
            os.kill(link._stdio._process.pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while link.status == "ready" and time.monotonic() < deadline:
                await asyncio.sleep(0.02)
            assert link.status == "down" and lost == ["down"]
            assert link.reason == "the server exited (see its log)"
            second = await call(manager, "t_pid")  # no error result first: crab knew it was gone
            assert not second.is_error and second.content != first
        finally:
            await manager.stop()

    asyncio.run(go())


def test_a_server_that_cannot_come_back_waits_out_a_growing_backoff(tmp_path, tiny_cmd):
    marker = tmp_path / "broken"
    script = tmp_path / "flaky.py"
    script.write_text(
        "import os, runpy, sys\n"
        f"if os.path.exists({str(marker)!r}): sys.exit(5)\n"
        f"sys.argv = [{tiny_cmd()['args'][0]!r}]\n"
        f"runpy.run_path({tiny_cmd()['args'][0]!r}, run_name='__main__')\n"
    )

    async def go() -> None:
        manager = manager_for(tmp_path, {"f": {"command": sys.executable, "args": [str(script)]}})
        assert await manager.start() == {}
        link = manager.links["f"]
        try:
            marker.write_text("x")
            await call(manager, "f_crash")
            failed = await call(manager, "f_pid")  # restart attempted at once, fails: backoff starts
            assert failed.is_error and "failed to start" in failed.content
            waiting = await call(manager, "f_pid")  # within the backoff: no new process
            assert waiting.is_error and "crab tries again in" in waiting.content
            assert link._failures == 1
            marker.unlink()
            link._retry_at = 0.0  # the backoff is over
            assert not (await call(manager, "f_pid")).is_error
            assert link._failures == 0
        finally:
            await manager.stop()

    asyncio.run(go())


def test_server_stderr_goes_to_its_log_file_not_the_terminal(tmp_path, tiny_cmd, capfd):
    async def go() -> None:
        manager = manager_for(tmp_path, {"noisy": tiny_cmd("--stderr")})
        assert await manager.start() == {}
        await manager.stop()

    asyncio.run(go())
    out, err = capfd.readouterr()
    assert "this goes to stderr" not in out + err
    assert "this goes to stderr" in (tmp_path / "logs" / "noisy.log").read_text()


def test_server_stderr_log_is_redacted_and_bounded(tmp_path, tiny_cmd, monkeypatch, unfence):
    # A server that prints the token it was given and then floods stderr: the stored log must
    # hold neither the token nor more than the cap, and the server must not block on a full pipe.
    import crab_mcp.server

    monkeypatch.setattr(crab_mcp.server, "MAX_LOG_BYTES", 100_000)
    environ = {"PATH": "/usr/bin:/bin", "MY_TOKEN": "t0ken-secret-value"}
    servers = {"loud": {**tiny_cmd("--leak-env", "TOKEN", "--flood", "3000000"), "env": {"TOKEN": "${MY_TOKEN}"}}}

    async def go() -> None:
        manager = manager_for(tmp_path, servers, environ)
        try:
            assert await manager.start() == {}
            result = await call(manager, "loud_add", {"a": 2, "b": 3})
            assert unfence(result.content) == "5", result.content
        finally:
            await manager.stop()

    asyncio.run(go())
    log = (tmp_path / "logs" / "loud.log").read_text()
    assert "t0ken-secret-value" not in log and f"TOKEN={REDACTED}" in log
    assert len(log) < 110_000 and "log cut" in log


def test_the_server_sees_only_the_safe_environment_and_its_resolved_env(tmp_path, tiny_cmd, unfence):
    environ = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "OPENAI_API_KEY": "sk-leak", "MY_TOKEN": "t0ken-value"}
    servers = {"e": {**tiny_cmd(), "env": {"TOKEN": "${MY_TOKEN}", "PLAIN": "p"}}}

    async def go() -> None:
        manager = manager_for(tmp_path, servers, environ)
        assert await manager.start() == {}
        try:
            names = (await call(manager, "e_env_names")).content.splitlines()
            assert "OPENAI_API_KEY" not in names and "MY_TOKEN" not in names
            assert {"TOKEN", "PLAIN", "PATH", "HOME"} <= set(names)
            # The server has the value; what it hands back to the model has it masked.
            assert unfence((await call(manager, "e_env", {"name": "TOKEN"})).content) == REDACTED
            assert unfence((await call(manager, "e_env", {"name": "PLAIN"})).content) == "p"
        finally:
            await manager.stop()

    asyncio.run(go())


def test_a_missing_env_reference_fails_that_server_naming_the_variable(tmp_path, tiny_cmd):
    servers = {"e": {**tiny_cmd(), "env": {"TOKEN": "${CRAB_TEST_UNSET_VAR}"}}}

    async def go() -> dict[str, str]:
        manager = manager_for(tmp_path, servers, {"PATH": "/usr/bin:/bin"})
        try:
            return await manager.start()
        finally:
            await manager.stop()

    failed = asyncio.run(go())
    assert failed == {"e": "env TOKEN references ${CRAB_TEST_UNSET_VAR}, which is not set in your environment"}


def test_servers_start_in_parallel(tmp_path, tiny_cmd):
    """Each server answers only once all three run: a one-after-another start could never finish."""
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    servers = {f"s{i}": {**tiny_cmd("--barrier", str(barrier), "3"), "connect_timeout": 60} for i in range(3)}

    async def go() -> dict[str, str]:
        manager = manager_for(tmp_path, servers)
        try:
            return await manager.start()
        finally:
            await manager.stop()

    assert asyncio.run(go()) == {}
    assert len(list(barrier.iterdir())) == 3


def test_a_message_over_max_message_ends_the_server_and_the_next_call_starts_it_again(tmp_path, tiny_cmd, unfence):
    # A 3 MB answer with a 1 MB limit: the call fails at once naming the limit (it is not read
    # whole), the process is ended, and the next call gets a fresh server that answers.
    servers = configs({"big": tiny_cmd()}, max_message=1_000_000, timeout=60)

    async def go() -> None:
        manager = Manager([ServerLink(c, tmp_path / "logs") for c in servers])
        assert await manager.start() == {}
        try:
            first = (await call(manager, "big_pid")).content
            big = await call(manager, "big_big", {"size": 3_000_000})
            assert big.is_error, big.content[:200]
            assert "sent a message over 1,000,000 bytes" in big.content and "max_message" in big.content
            assert "starts it again on the next call" in big.content
            assert manager.links["big"].status == "down"
            again = await call(manager, "big_pid")
            assert not again.is_error and again.content != first
            assert unfence((await call(manager, "big_big", {"size": 10})).content) == "x" * 10
        finally:
            await manager.stop()

    asyncio.run(go())
    assert "crab ended the server" in (tmp_path / "logs" / "big.log").read_text()


def test_a_call_that_times_out_ends_the_server_and_the_next_call_gets_a_fresh_one(tmp_path, tiny_cmd):
    # Whatever kept the server from answering (a huge reply on its way, a wedged loop) must not
    # make every later call wait out its timeout too.
    async def go() -> None:
        manager = manager_for(tmp_path, {"t": {**tiny_cmd(), "timeout": 1}})
        assert await manager.start() == {}
        try:
            first = (await call(manager, "t_pid")).content
            slow = await call(manager, "t_slow", {"seconds": 60})
            assert slow.is_error and "did not answer slow within 1 s" in slow.content
            assert "starts it again on the next call" in slow.content
            assert manager.links["t"].status == "down"
            again = await call(manager, "t_pid")
            assert not again.is_error and again.content != first
        finally:
            await manager.stop()

    asyncio.run(go())


def test_lines_on_stdout_that_are_not_json_rpc_go_to_the_servers_log_not_the_terminal(
    tmp_path, tiny_cmd, capfd, root_records, unfence
):
    async def go() -> None:
        manager = manager_for(tmp_path, {"junk": tiny_cmd("--junk", "6")})
        try:
            assert await manager.start() == {}
            assert unfence((await call(manager, "junk_add", {"a": 1, "b": 2})).content) == "3"
        finally:
            await manager.stop()

    asyncio.run(go())
    out, err = capfd.readouterr()
    assert out + err == "", (out + err)[:500]
    # Nothing reached Python's logging either (without crab's routing it prints to stderr).
    assert [r.getMessage() for r in root_records if r.name.startswith("mcp")] == []
    log = (tmp_path / "logs" / "junk.log").read_text()
    assert [line for line in log.splitlines() if "not JSON-RPC" in line] == [
        f"[stdout, not JSON-RPC] junk line {n}: this is not JSON-RPC" for n in range(6)
    ]


def test_a_server_that_hangs_on_initialize_is_ended_at_once_without_a_shutdown_grace(tmp_path, tiny_cmd):
    # The polite shutdown (close stdin, wait, then signal) is for a server that started; one that
    # never answered is ended at once, so start-up costs connect_timeout and nothing on top.
    # The server ignores the end of its stdin and records it: had crab closed stdin and waited,
    # the file would be there (bench/mcp_startup.py measures the time).
    eof = tmp_path / "saw-eof"

    async def go() -> dict[str, str]:
        manager = manager_for(tmp_path, {"hang": {**tiny_cmd("--mute", "--on-eof", str(eof)), "connect_timeout": 1}})
        try:
            return await manager.start()
        finally:
            await manager.stop()

    failed = asyncio.run(go())
    assert failed["hang"].startswith("did not answer within 1 s")
    assert not eof.exists()


def test_a_started_server_is_still_stopped_politely_stdin_first(tmp_path, tiny_cmd):
    async def go() -> int | None:
        manager = manager_for(tmp_path, {"t": tiny_cmd()})
        assert await manager.start() == {}
        transport = manager.links["t"]._stdio
        await manager.stop()
        assert transport is not None and transport._process is not None
        return transport._process.returncode

    # The tiny server leaves by itself (status 0) once its stdin closes: no signal was needed.
    assert asyncio.run(go()) == 0


def test_crab_introduces_itself_as_crab_and_its_version(tmp_path, tiny_cmd, unfence):
    import crab

    async def go() -> str:
        manager = manager_for(tmp_path, {"t": tiny_cmd()})
        assert await manager.start() == {}
        try:
            return str((await call(manager, "t_client_info")).content)
        finally:
            await manager.stop()

    assert unfence(asyncio.run(go())) == f"crab {crab.__version__}"


def test_a_server_lacking_optional_listings_still_gives_its_tools(tmp_path, tiny_cmd, unfence):
    # It declares resources and prompts but answers resources/templates/list and prompts/list
    # with -32601: an optional method it lacks, not a dead server (issue 39, item 3).
    async def go() -> None:
        manager = manager_for(tmp_path, {"lack": tiny_cmd("--lacking")})
        try:
            assert await manager.start() == {}
            link = manager.links["lack"]
            assert link.status == "ready" and link.prompts == [] and link.templates == []
            assert "note" in {r.name for r in link.resources}  # what it does list is kept
            assert unfence((await call(manager, "lack_add", {"a": 2, "b": 3})).content) == "5"
        finally:
            await manager.stop()

    asyncio.run(go())
    log = (tmp_path / "logs" / "lack.log").read_text()
    assert "declares prompts but refused to list them (error -32601" in log


def test_a_5_mb_result_arrives_cut_to_what_the_model_reads_saying_so(tmp_path, tiny_cmd, unfence):
    # Over the old 4 MB transport cap, far under the default one: the answer is read, cut to the
    # 50 KB the model reads of any tool result, inside a fence that still closes, and the note
    # after it says what was cut (issue 39, item 7).
    servers = configs({"big": tiny_cmd()})

    async def go() -> Any:
        manager = Manager([ServerLink(c, tmp_path / "logs") for c in servers])
        assert await manager.start() == {}
        try:
            return await call(manager, "big_big", {"size": 5_000_000}), manager.links["big"].status
        finally:
            await manager.stop()

    big, status = asyncio.run(go())
    assert not big.is_error and status == "ready", big.content[:300]
    fenced, _, note = big.content.rpartition("\n")
    assert unfence(fenced) == "x" * 50_000
    assert note.startswith("[output truncated: showing the first 1 of 1 lines (50000 of 5000000 bytes)")
    assert "ask the tool for less" in note


def test_a_call_that_times_out_is_cancelled_at_the_server_before_it_is_ended(tmp_path, tiny_cmd):
    # notifications/cancelled (the spec's way: the request id and a reason) reaches the server
    # before crab ends it, so the server can stop that call's work (issue 39, item 5).
    import json
    import time

    log = tmp_path / "cancelled.jsonl"

    async def go() -> Any:
        manager = manager_for(tmp_path, {"t": {**tiny_cmd("--cancel-log", str(log)), "timeout": 1}})
        assert await manager.start() == {}
        try:
            slow = await call(manager, "t_slow", {"seconds": 60})
            deadline = time.monotonic() + 30
            while not log.exists() and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
            return slow
        finally:
            await manager.stop()

    slow = asyncio.run(go())
    assert slow.is_error and "did not answer slow within 1 s" in slow.content
    assert log.exists(), "the server never got notifications/cancelled for the call that timed out"
    (seen,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert isinstance(seen["requestId"], int) and "timed out" in seen["reason"]
