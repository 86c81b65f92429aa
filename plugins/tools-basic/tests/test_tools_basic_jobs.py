"""Background shells: a job outlives its call but not its session; output is a bounded, redacted
ring read in pieces; bash_kill ends it and what it forked; the command wrappers apply."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from crab import ToolContext, ToolError, ToolResult, processes
from crab.secrets import REDACTED
from crab.testing import process_alive as alive
from crab.tools import run_tool
from crab_tools_basic import jobs
from crab_tools_basic.job_output import held_from, incomplete_utf8
from crab_tools_basic.job_tools import list_jobs
from crab_tools_basic.line_filter import matching_lines
from crab_tools_basic.registry import build_tools
from crab_tools_basic.ring import OutputRing

WAIT = 60.0


async def until(check: Callable[[], Any], what: str, within: float = WAIT) -> Any:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def pid_in(path: Path) -> Callable[[], int | None]:
    def read() -> int | None:
        text = path.read_text().strip() if path.exists() else ""
        return int(text) if text.isdigit() else None

    return read


Call = Callable[..., Awaitable[ToolResult]]


def scenario(ctx: ToolContext, settings: dict[str, Any], body: Callable[[Call], Awaitable[None]]) -> None:
    """Run ``body(call)`` on one event loop (a job lives on the loop that started it), then end
    the session's jobs as ``crab_shutdown`` would."""
    tools = {t.name: t for t in build_tools(settings)}

    async def call(name: str, **arguments: Any) -> ToolResult:
        return await run_tool(tools[name], arguments, ctx)

    async def main() -> None:
        try:
            await body(call)
        finally:
            table = ctx.state.get(jobs.STATE_KEY)
            if isinstance(table, jobs.JobTable):
                await table.close()

    asyncio.run(asyncio.wait_for(main(), WAIT * 2))


def test_a_job_outlives_its_call_and_reports_its_exit_once_read(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    async def body(call: Call) -> None:
        started = await call(
            "bash",
            command="echo first; echo $$ > job.pid; while [ ! -e go ]; do sleep 0.02; done; echo second; exit 3",
            background=True,
        )
        assert not started.is_error, started.content
        assert started.details["job_id"] == "job-1"
        assert "started job-1 in the background" in started.content
        pid = await until(pid_in(workspace / "job.pid"), "the job's pid")
        assert alive(pid)  # the call is over, the job is not
        table = ctx.state[jobs.STATE_KEY]
        await until(lambda: table.jobs["job-1"].ring.total >= len("first\n"), "the first line in the ring")
        first = await call("bash_output", job_id="job-1")
        assert first.content.splitlines() == ["first", first.content.splitlines()[-1]]
        assert "job-1 is running" in first.content and not first.is_error
        assert (await call("bash_output", job_id="job-1")).content.startswith("(no new output)\n")

        (workspace / "go").touch()
        await asyncio.wait_for(table.jobs["job-1"].done.wait(), WAIT)
        last = await call("bash_output", job_id="job-1")
        assert last.content.splitlines()[0] == "second"
        assert "[job-1 exited with code 3 after" in last.content
        assert last.is_error and last.details["exit_code"] == 3 and last.details["state"] == "failed"
        assert len(table.jobs["job-1"].ring._buffer) == 0  # read to the end: the output is let go
        assert (await call("bash_output", job_id="job-1")).content.startswith("(no new output)\n[job-1 exited")

    scenario(ctx, settings, body)


def test_bash_kill_ends_the_job_and_what_it_started_in_another_session(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    pids: list[int] = []

    async def body(call: Call) -> None:
        await call(
            "bash",
            command="setsid sleep 3101 & echo $! > child.pid; echo $$ > job.pid; trap '' TERM; wait",
            background=True,
        )
        pids.append(await until(pid_in(workspace / "job.pid"), "the job's pid"))
        pids.append(await until(pid_in(workspace / "child.pid"), "the setsid child's pid"))
        killed = await call("bash_kill", job_id="job-1")
        assert "job-1 ended" in killed.content and not killed.is_error
        assert not any(alive(pid) for pid in pids)
        after = await call("bash_output", job_id="job-1")
        assert "[job-1 ended by bash_kill after" in after.content and not after.is_error
        again = await call("bash_kill", job_id="job-1")
        assert "had already ended" in again.content

    scenario(ctx, settings, body)
    assert not any(alive(pid) for pid in pids)


def test_ending_the_table_ends_every_job(workspace: Path, ctx: ToolContext, settings: dict[str, Any]) -> None:
    pids: list[int] = []

    async def body(call: Call) -> None:
        for n in range(3):
            await call("bash", command=f"echo $$ > job{n}.pid; exec sleep 310{n}", background=True)
        for n in range(3):
            pids.append(await until(pid_in(workspace / f"job{n}.pid"), f"job {n}'s pid"))
        assert all(alive(pid) for pid in pids)
        await ctx.state[jobs.STATE_KEY].close()
        assert not any(alive(pid) for pid in pids)
        shown = await call("bash_output", job_id="job-2")
        assert "[job-2 ended at the session end after" in shown.content

    scenario(ctx, settings, body)


def test_when_the_shell_exits_what_it_left_running_ends_too(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    async def body(call: Call) -> None:
        await call("bash", command="sleep 3104 & echo $! > child.pid; echo bye", background=True)
        child = await until(pid_in(workspace / "child.pid"), "the child's pid")
        job = ctx.state[jobs.STATE_KEY].jobs["job-1"]
        await asyncio.wait_for(job.done.wait(), WAIT)
        assert not alive(child)
        shown = await call("bash_output", job_id="job-1")
        assert shown.content.splitlines()[0] == "bye" and "exited with code 0" in shown.content

    scenario(ctx, settings, body)


def test_the_ring_keeps_the_latest_output_and_says_what_it_dropped(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    settings["bash_job_buffer"] = 65536

    async def body(call: Call) -> None:
        # 4 MB of numbered lines, then a last line: far more than the ring holds.
        await call("bash", command="seq 1 500000; echo the-end", background=True)
        job = ctx.state[jobs.STATE_KEY].jobs["job-1"]
        await asyncio.wait_for(job.done.wait(), WAIT)
        assert len(job.ring._buffer) <= 2 * 65536
        shown = await call("bash_output", job_id="job-1")
        lines = shown.content.splitlines()
        total = len("".join(f"{n}\n" for n in range(1, 500001))) + len("the-end\n")
        assert lines[0] == (
            f"[{total - 65536} bytes of output before this were dropped: a job keeps only its last 65536 "
            "bytes; read more often, or send the output to a file]"
        )
        assert lines[1].startswith("[") and "earlier lines" in lines[1]  # 64 KB is over the 50 KB limit
        assert lines[-2] == "the-end" and lines[-3] == "500000"
        assert len(shown.content.encode()) < 52_000
        assert shown.details["dropped_bytes"] == total - 65536

    scenario(ctx, settings, body)


def test_a_filter_keeps_matching_lines_and_waits_for_unfinished_ones(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    async def body(call: Call) -> None:
        await call(
            "bash",
            command="printf 'ok 1\\nno 2\\nok 3'; touch half; "
            "while [ ! -e go ]; do sleep 0.02; done; printf ' done\\nok 4\\n'",
            background=True,
        )
        await until(lambda: (workspace / "half").exists(), "the first lines")
        job = ctx.state[jobs.STATE_KEY].jobs["job-1"]
        await until(lambda: job.ring.total >= 13, "the first lines in the ring")
        first = await call("bash_output", job_id="job-1", filter=r"^ok")
        assert first.content.splitlines()[0] == "ok 1" and "ok 3" not in first.content
        (workspace / "go").touch()
        await asyncio.wait_for(job.done.wait(), WAIT)
        last = await call("bash_output", job_id="job-1", filter=r"^ok")
        assert last.content.splitlines()[:2] == ["ok 3 done", "ok 4"]
        bad = await call("bash_output", job_id="job-1", filter="(")
        assert bad.is_error and bad.content.startswith("filter is not a valid regular expression")

    scenario(ctx, settings, body)


def test_a_backtracking_filter_is_ended_at_its_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(ToolError, match="longer than 1 s"):
        asyncio.run(matching_lines("x" * 40 + "\n", "(x+x+)+y", deadline=1.0))
    assert time.monotonic() - started < WAIT


def test_secrets_are_masked_also_when_a_read_cuts_one_in_two(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-bgtest-0123456789abcdef"
    monkeypatch.setenv("BGTEST_API_KEY", secret)
    (workspace / "first").write_text(f"key {secret[:12]}")
    (workspace / "second").write_text(f"{secret[12:]} and {secret}\n")

    async def body(call: Call) -> None:
        await call(
            "bash",
            command="cat first; touch half; while [ ! -e go ]; do sleep 0.02; done; cat second",
            background=True,
        )
        await until(lambda: (workspace / "half").exists(), "the first half")
        job = ctx.state[jobs.STATE_KEY].jobs["job-1"]
        await until(lambda: job.ring.total >= 16, "the first half in the ring")
        first = await call("bash_output", job_id="job-1")
        assert secret[:6] not in first.content
        assert first.content.startswith("key ")
        (workspace / "go").touch()
        await asyncio.wait_for(job.done.wait(), WAIT)
        second = await call("bash_output", job_id="job-1")
        whole = first.content + second.content
        assert secret[:6] not in whole and secret[-6:] not in whole
        assert second.content.splitlines()[0] == f"{REDACTED} and {REDACTED}"

    scenario(ctx, settings, body)


def test_jobs_are_bounded_per_session(workspace: Path, ctx: ToolContext, settings: dict[str, Any]) -> None:
    settings["bash_max_jobs"] = 2

    async def body(call: Call) -> None:
        for n in range(2):
            assert not (await call("bash", command=f"exec sleep 311{n}", background=True)).is_error
        third = await call("bash", command="exec sleep 3112", background=True)
        assert third.is_error
        assert third.content == (
            "2 background jobs are already running (bash_max_jobs): end one with bash_kill, or wait for one to finish"
        )
        await call("bash_kill", job_id="job-1")
        assert not (await call("bash", command="exec sleep 3113", background=True)).is_error
        unknown = await call("bash_output", job_id="job-9")
        assert (
            unknown.is_error
            and unknown.content == "no background job 'job-9' in this session (jobs: job-1, job-2, job-3)"
        )

    scenario(ctx, settings, body)


def test_no_jobs_when_they_are_turned_off(ctx: ToolContext, settings: dict[str, Any]) -> None:
    settings["bash_max_jobs"] = 0

    async def body(call: Call) -> None:
        refused = await call("bash", command="true", background=True)
        assert refused.is_error and "bash_max_jobs = 0" in refused.content

    scenario(ctx, settings, body)


def test_a_command_wrapper_applies_to_background_jobs(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    seen: list[processes.Launch] = []

    def wrapper(launch: processes.Launch) -> list[str]:
        seen.append(launch)
        return ["env", "WRAPPED_BY_TEST=yes", *launch.argv]

    async def body(call: Call) -> None:
        await call("bash", command="echo wrapped=$WRAPPED_BY_TEST", background=True)
        job = ctx.state[jobs.STATE_KEY].jobs["job-1"]
        await asyncio.wait_for(job.done.wait(), WAIT)
        assert (await call("bash_output", job_id="job-1")).content.startswith("wrapped=yes\n")

    remove = processes.add_command_wrapper(wrapper)
    try:
        scenario(ctx, settings, body)
    finally:
        remove()
    assert [(launch.tool, launch.permission) for launch in seen] == [("bash", "exec")]
    assert seen[0].cwd == workspace


def test_list_jobs_shows_id_state_runtime_exit_and_command(
    workspace: Path, ctx: ToolContext, settings: dict[str, Any]
) -> None:
    async def body(call: Call) -> None:
        await call("bash", command="exit 4", background=True)
        await call("bash", command="exec   sleep 3120\n# a comment", background=True)
        table = ctx.state[jobs.STATE_KEY]
        await asyncio.wait_for(table.jobs["job-1"].done.wait(), WAIT)
        rows = [line.split() for line in list_jobs(table).splitlines()]
        assert rows[0] == ["id", "state", "runtime", "exit", "command"]
        assert rows[1][:2] == ["job-1", "failed"] and rows[1][4] == "4" and rows[1][5:] == ["exit", "4"]
        assert rows[2][:2] == ["job-2", "running"] and rows[2][4] == "-"
        assert rows[2][5:] == ["exec", "sleep", "3120", "#", "a", "comment"]

    scenario(ctx, settings, body)
    assert list_jobs(None) == "no background jobs in this session"


def test_the_ring_counts_what_a_reader_missed() -> None:
    ring = OutputRing(limit=10)
    ring.feed(b"0123456789")
    first = ring.read(0)
    assert (first.data, first.dropped) == (b"0123456789", 0)
    for _ in range(5):
        ring.feed(b"abcdefgh")
    later = ring.read(first.end)
    assert later.data == b"cdefghabcdefgh"[-10:] and later.dropped == 40 - 10
    assert ring.read(ring.total).data == b""


def test_read_boundaries_hold_back_half_characters_and_half_secrets() -> None:
    assert incomplete_utf8("é".encode()[:1]) == 1
    assert incomplete_utf8("€".encode()[:2]) == 2
    assert incomplete_utf8("ab€".encode()) == 0
    assert held_from("value sk-ab", ["sk-abcdef"]) == len("value ")
    assert held_from("value sk-abcdef", ["sk-abcdef"]) == len("value sk-abcdef")
