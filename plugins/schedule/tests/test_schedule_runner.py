"""The scheduler with a fake clock: delivery to the origin or the log, failures reported, missed
runs coalesced or skipped, one instance at a time, the permission ceiling of agent jobs."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import crab
import crab_schedule
import pytest
from crab_schedule import ceiling
from crab_schedule.adding import add_job
from crab_schedule.jobs import Origin
from crab_schedule.runner import Scheduler
from crab_schedule.sqlite_store import SQLiteJobStore


def setup(tmp_path, fakes, **changes):
    clock = fakes.FakeClock()
    conf = fakes.settings(tmp_path / "schedule.db", **changes)
    store = SQLiteJobStore(conf.path)
    return clock, conf, store, Scheduler(conf, store=store, clock=clock, worker="w1")


def add(store, conf, clock, *, origin=None, mode="reminder", text="standup", **when):
    """``when``: the schedule (default ``after="1m"``), and ``timeout``/``longest_timeout`` when given."""
    limits = {key: when.pop(key) for key in ("timeout", "longest_timeout") if key in when}
    return asyncio.run(
        add_job(
            store,
            conf,
            now=clock.now(),
            mode=mode,
            text=text,
            origin=origin or Origin("cli"),
            permissions="ask",
            **(when or {"after": "1m"}),
            **limits,
        )
    )


async def poll_and_wait(scheduler, handle):
    started = await scheduler.poll(handle)
    await asyncio.gather(*scheduler.running.values())
    return started


def test_a_terminal_reminder_goes_to_the_log_when_due_and_not_before(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    job = add(store, conf, clock)
    handle = fakes.FakeHandle()
    assert asyncio.run(poll_and_wait(scheduler, handle)) == []
    clock.advance(minutes=1)
    assert asyncio.run(poll_and_wait(scheduler, handle)) == [job.id]
    [entry] = asyncio.run(store.records())
    assert (entry.status, entry.destination, entry.text) == ("ok", "log", "Reminder: standup")
    done = asyncio.run(store.get(job.id))
    assert done.next_run is None and done.last_status == "ok" and done.claimed_by is None


def test_a_chat_reminder_is_delivered_to_its_chat_and_logged(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    add(store, conf, clock, origin=Origin("tool", "s1", "fakechat", "alice"))
    clock.advance(minutes=2)
    handle = fakes.FakeHandle(channels={"fakechat"})
    asyncio.run(poll_and_wait(scheduler, handle))
    assert handle.delivered == [("fakechat", "alice", "Reminder: standup")]
    assert [(r.status, r.destination) for r in asyncio.run(store.records())] == [("ok", "fakechat:alice")]


def test_a_delivery_that_fails_is_recorded_never_silent(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    job = add(store, conf, clock, origin=Origin("tool", "s1", "telegram", "42"))
    clock.advance(minutes=2)
    handle = fakes.FakeHandle()  # telegram does not run in this serve
    asyncio.run(poll_and_wait(scheduler, handle))
    [entry] = asyncio.run(store.records())
    assert entry.status == "undelivered" and "no channel named 'telegram'" in (entry.error or "")
    assert entry.text == "Reminder: standup"
    assert any("no channel named 'telegram'" in n for n in handle.notices)
    assert asyncio.run(store.get(job.id)).last_status == "undelivered"


def test_an_agent_job_runs_its_prompt_in_the_originating_session_and_delivers_the_answer(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    job = add(store, conf, clock, origin=Origin("tool", "s1", "fakechat", "bob"), mode="agent", text="summarize")
    clock.advance(minutes=2)
    handle = fakes.FakeHandle(channels={"fakechat"}, outcome=fakes.Outcome("all quiet"))
    asyncio.run(poll_and_wait(scheduler, handle))
    assert handle.prompts == [("fakechat:bob", f"[scheduled job {job.id}] summarize")]
    assert handle.delivered == [("fakechat", "bob", "all quiet")]


def test_on_a_turn_engine_a_job_of_every_mode_runs_its_mode_offered_to_the_engine(tmp_path, fakes):
    # [serve] engine runs turns on other processes, which never see this process's
    # crab_before_tool_call: while the job's turn runs, crab_turn_ceilings offers the engine its
    # mode (crab-temporal hands it to the workers), and after it nothing is held.
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    config = crab.Config({"serve": {"engine": "temporal"}}, crab.config.crab_home() / "config.toml", None)
    held = crab_schedule.crab_turn_ceilings(config)
    seen: list[str | None] = []

    class Engine(fakes.FakeHandle):
        async def handle_input(self, session, text):
            seen.append(held(session.id))
            return await super().handle_input(session, text)

    handle = Engine(channels={"fakechat"}, config=config)
    for permissions in ("read-only", "ask", "yolo"):
        job = asyncio.run(
            add_job(
                store,
                conf,
                now=clock.now(),
                mode="agent",
                text="go",
                origin=Origin("tool", "s1", "fakechat", "bob"),
                permissions=permissions,
                after="1m",
            )
        )
        clock.advance(minutes=2)
        asyncio.run(poll_and_wait(scheduler, handle))
        assert handle.prompts[-1] == ("fakechat:bob", f"[scheduled job {job.id}] go")
        assert held("fakechat:bob") is None
    assert seen == ["read-only", "ask", "yolo"]
    assert [entry.status for entry in asyncio.run(store.records())] == ["ok", "ok", "ok"]


def test_a_failing_agent_job_reports_its_error_where_it_came_from(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    job = add(store, conf, clock, origin=Origin("tool", "s1", "fakechat", "bob"), mode="agent", text="go")
    clock.advance(minutes=2)
    handle = fakes.FakeHandle(channels={"fakechat"}, outcome=fakes.Outcome("", "error", "provider overloaded (529)"))
    asyncio.run(poll_and_wait(scheduler, handle))
    [(_, _, text)] = handle.delivered
    assert text == f"Scheduled job {job.id} (once at {job.trigger.describe()[8:]}) failed: provider overloaded (529)"
    stored = asyncio.run(store.get(job.id))
    assert stored.last_status == "error" and stored.last_error == "provider overloaded (529)"


def test_an_exception_in_a_terminal_job_is_logged_and_noticed(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    add(store, conf, clock, mode="agent", text="go")
    clock.advance(minutes=2)
    handle = fakes.FakeHandle(outcome=RuntimeError("boom"))
    asyncio.run(poll_and_wait(scheduler, handle))
    [entry] = asyncio.run(store.records())
    assert (
        entry.status == "error" and entry.error == "RuntimeError: boom" and "failed: RuntimeError: boom" in entry.text
    )
    assert any("RuntimeError: boom" in n for n in handle.notices)


def test_missed_runs_are_coalesced_into_one_within_the_catch_up_window(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes, catch_up=timedelta(hours=6))
    job = add(store, conf, clock, every="1h")
    clock.advance(hours=4, minutes=30)  # four runs missed while nothing ran
    handle = fakes.FakeHandle()
    asyncio.run(poll_and_wait(scheduler, handle))
    asyncio.run(poll_and_wait(scheduler, handle))
    assert [r.status for r in asyncio.run(store.records())] == ["ok"]
    assert asyncio.run(store.get(job.id)).next_run == job.created + timedelta(hours=5)


def test_a_run_later_than_the_catch_up_window_is_skipped_and_logged(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes, catch_up=timedelta(hours=1))
    job = add(store, conf, clock, cron="0 9 * * *", timezone="UTC")
    clock.advance(hours=4)  # due 09:00, now 12:00
    asyncio.run(poll_and_wait(scheduler, fakes.FakeHandle()))
    [entry] = asyncio.run(store.records())
    assert entry.status == "missed" and "Skipped scheduled job" in entry.text
    assert asyncio.run(store.get(job.id)).next_run.hour == 9 and asyncio.run(store.get(job.id)).next_run.day == 2


def test_a_running_job_is_not_started_again(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    job = add(store, conf, clock, mode="agent", text="slow", every="1m")
    clock.advance(minutes=1)
    gate = asyncio.Event()

    class Slow(fakes.FakeHandle):
        async def handle_input(self, session, text):
            self.prompts.append((session.id, text))
            await gate.wait()
            return fakes.Outcome("done")

    handle = Slow()

    async def scenario():
        assert await scheduler.poll(handle) == [job.id]
        await asyncio.sleep(0)
        clock.advance(minutes=3)  # due again while the first run goes on
        assert await scheduler.poll(handle) == []
        gate.set()
        await asyncio.gather(*scheduler.running.values())

    asyncio.run(scenario())
    assert len(handle.prompts) == 1


def test_an_agent_job_is_held_to_the_permissions_of_its_creator():
    bash = crab.Tool("bash", "", {"type": "object"}, lambda a, c: "", permission="exec")
    read = crab.Tool("read", "", {"type": "object"}, lambda a, c: "", permission="read")
    config = crab.Config({"crab": {"permissions": "yolo"}}, crab.config.crab_home() / "config.toml", None)
    ctx = crab.ToolContext(session_id="s-job", workspace=crab.config.crab_home(), config=config)
    assert asyncio.run(ceiling.decide(bash, ctx)) is None  # no job running: core's gate decides
    ceiling.hold("s-job", "read-only")
    try:
        assert isinstance(asyncio.run(ceiling.decide(bash, ctx)), crab.hooks.Deny)
        assert asyncio.run(ceiling.decide(read, ctx)) is None
    finally:
        ceiling.release("s-job", "read-only")
    ceiling.hold("s-job", "ask")
    try:
        # crab serve runs yolo, but the creator was asked before such calls: refused, never more
        assert isinstance(asyncio.run(ceiling.decide(bash, ctx)), crab.hooks.Deny)
    finally:
        ceiling.release("s-job", "ask")
    assert ceiling.mode_for("s-job") is None


def test_declared_jobs_are_synced_into_the_store_replaced_when_edited_and_removed_when_gone(tmp_path, fakes):
    from crab_schedule.config_jobs import sync_jobs

    clock, conf, store, _ = setup(tmp_path, fakes)
    declared = {"standup": {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "message": "standup", "to": "tg:1"}}

    def sync(jobs):
        return asyncio.run(sync_jobs(store, jobs, timezone="UTC", permissions="ask", now=clock.now()))

    assert sync(declared) == ["config-standup"]
    assert sync(declared) == []  # unchanged: kept as it is (its run history too)
    [job] = asyncio.run(store.list())
    assert (job.origin.source, job.origin.destination, job.trigger.timezone) == ("config", "tg:1", "Europe/Berlin")
    declared["standup"]["message"] = "standup, room 2"
    assert sync(declared) == ["config-standup"]
    assert asyncio.run(store.get("config-standup")).text == "standup, room 2"
    add(store, conf, clock)  # a job added by hand is not the config's to remove
    sync({})
    assert [j.origin.source for j in asyncio.run(store.list())] == ["cli"]


def test_a_bad_declared_job_is_one_config_line(tmp_path):
    from crab_schedule.settings import TABLE

    with pytest.raises(crab.InvalidValue) as caught:
        TABLE.validate({"jobs": {"standup": {"cron": "0 9 * *", "message": "x"}}})
    assert str(caught.value).startswith(
        "config: plugins.schedule.jobs.standup.cron: expected a five-field cron expression"
    )
    with pytest.raises(crab.InvalidValue, match="exactly one of message or prompt"):
        TABLE.validate({"jobs": {"a": {"every": "1h"}}})
    with pytest.raises(crab.InvalidValue, match="expected an IANA timezone"):
        TABLE.validate({"jobs": {"a": {"every": "1h", "message": "x", "timezone": "Nowhere/Land"}}})


def test_a_run_cancelled_with_the_scheduler_is_logged_as_interrupted_and_released_still_due(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    job = add(store, conf, clock, mode="agent", text="endless")
    clock.advance(minutes=1)

    class Hung(fakes.FakeHandle):
        async def handle_input(self, session, text):
            await asyncio.Event().wait()  # a turn that never ends by itself

    async def scenario():
        serving = asyncio.ensure_future(scheduler.run(Hung()))
        while job.id not in scheduler.running:
            await asyncio.sleep(0.01)
        serving.cancel()  # what crab serve does once [serve] grace_seconds are over
        with pytest.raises(asyncio.CancelledError):
            await serving

    asyncio.run(scenario())
    stored = asyncio.run(store.get(job.id))
    assert (stored.claimed_by, stored.lease_until, stored.next_run) == (None, None, job.next_run)
    assert (stored.runs, stored.last_error) == (1, "interrupted by shutdown")
    [entry] = asyncio.run(store.records())
    assert entry.status == "error" and entry.error == "interrupted: crab serve stopped during the run"


class Hung:
    """A FakeHandle mix-in whose turns never end by themselves."""

    async def handle_input(self, session, text):
        self.prompts.append((session.id, text))
        await asyncio.Event().wait()


@pytest.mark.parametrize("origin", [Origin("cli"), Origin("tool", "s1", "fakechat", "hal")])
def test_a_hung_agent_job_times_out_as_an_error_record_and_one_warning(tmp_path, fakes, origin):
    clock, conf, store, scheduler = setup(tmp_path, fakes, job_timeout=0.2)
    job = add(store, conf, clock, origin=origin, mode="agent", text="hang")
    clock.advance(minutes=1)
    handle = type("HungHandle", (Hung, fakes.FakeHandle), {})(channels={"fakechat"})
    asyncio.run(poll_and_wait(scheduler, handle))
    [entry] = asyncio.run(store.records())
    assert (entry.status, entry.error) == ("error", "timed out after 0.2s ([plugins.schedule] job_timeout)")
    [warning] = handle.notices
    assert "timed out after 0.2s" in warning and "\n" not in warning
    stored = asyncio.run(store.get(job.id))
    assert (stored.claimed_by, stored.last_status, stored.next_run) == (None, "error", None)
    if origin.channel:
        [(_, _, text)] = handle.delivered
        assert text.endswith("failed: timed out after 0.2s ([plugins.schedule] job_timeout)")


def test_a_jobs_own_timeout_wins_over_the_default_and_the_tool_may_only_shorten_it(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes, job_timeout=3600.0)
    job = add(store, conf, clock, mode="agent", text="hang", after="1m", timeout=0.2)
    assert job.timeout == 0.2 and asyncio.run(store.get(job.id)).timeout == 0.2
    clock.advance(minutes=1)
    asyncio.run(poll_and_wait(scheduler, type("HungHandle", (Hung, fakes.FakeHandle), {})()))
    [entry] = asyncio.run(store.records())
    assert entry.error == "timed out after 0.2s (the job's timeout)"
    with pytest.raises(crab.UsageError, match="longer than the 1h allowed"):
        add(store, conf, clock, mode="agent", text="x", after="1m", timeout="2h", longest_timeout=3600.0)
    with pytest.raises(crab.UsageError, match="a timeout is for agent jobs"):
        add(store, conf, clock, text="x", after="1m", timeout="2h")
    assert add(store, conf, clock, mode="agent", text="x", after="1m", timeout="30m").timeout == 1800


def test_failed_tool_calls_of_an_answered_job_are_in_its_log_record(tmp_path, fakes):
    clock, conf, store, scheduler = setup(tmp_path, fakes)
    job = add(store, conf, clock, mode="agent", text="check")
    clock.advance(minutes=1)
    failed = crab.events.ToolResultEvent(
        call_id="c1", name="bash", content="exit status 2\nstderr: nope", is_error=True
    )
    fine = crab.events.ToolResultEvent(call_id="c2", name="read", content="ok")
    handle = fakes.FakeHandle(outcome=fakes.Outcome("done, mostly"), events=[failed, fine])
    asyncio.run(poll_and_wait(scheduler, handle))
    [entry] = asyncio.run(store.records())
    assert (entry.status, entry.text, entry.error) == ("ok", "done, mostly", "1 tool call failed: bash: exit status 2")
    stored = asyncio.run(store.get(job.id))
    assert (stored.last_status, stored.last_error) == ("ok", "1 tool call failed: bash: exit status 2")
    assert handle.notices == []  # answered: no warning, the log says what failed


def test_a_running_job_is_listed_as_running_and_a_lapsed_claim_is_not(tmp_path, fakes):
    from crab_schedule.adding import describe_job, job_json

    clock, conf, store, _ = setup(tmp_path, fakes)
    job = add(store, conf, clock)
    clock.advance(minutes=1)
    claimed = asyncio.run(store.claim(job.id, "host:7:ab", clock.now(), conf.lease))
    assert "; running now on host:7:ab:" in describe_job(claimed, clock.now())
    assert job_json(claimed, clock.now())["running"] is True
    clock.advance(minutes=10)  # the worker died: its lease ran out, the job is due again
    assert "; next " in describe_job(claimed, clock.now()) and not job_json(claimed, clock.now())["running"]


class BatchStore(SQLiteJobStore):
    """A store with the optional batch claim (as crab-store-postgres has), made of due + claim."""

    async def claim_due(self, worker, now, lease, limit):
        self.asked = [*getattr(self, "asked", []), limit]
        claimed = [await self.claim(job.id, worker, now, lease) for job in await self.due(now, limit)]
        return [job for job in claimed if job is not None]


@pytest.mark.parametrize("store_class", [SQLiteJobStore, BatchStore])
def test_a_worker_claims_only_as_many_due_jobs_as_it_has_room_for(tmp_path, fakes, store_class):
    clock, conf, _, _ = setup(tmp_path, fakes, max_running=2)
    store = store_class(conf.path)
    first, second = (Scheduler(conf, store=store, clock=clock, worker=name) for name in ("w1", "w2"))
    jobs = [add(store, conf, clock, mode="agent", text=f"job {n}") for n in range(5)]
    clock.advance(minutes=1)
    gate = asyncio.Event()

    class Waiting(fakes.FakeHandle):
        async def handle_input(self, session, text):
            await gate.wait()
            return fakes.Outcome("done")

    async def scenario():
        handle = Waiting()
        taken = [await first.poll(handle), await second.poll(handle), await first.poll(handle)]
        gate.set()
        await asyncio.gather(*first.running.values(), *second.running.values())
        return taken

    one, two, full = asyncio.run(scenario())
    assert (len(one), len(two), full) == (2, 2, [])  # the fifth is left for a worker with room
    assert not set(one) & set(two)
    left = [job for job in asyncio.run(store.list()) if job.runs == 0]
    assert [job.id for job in left] == [job.id for job in jobs if job.id not in one + two]
    if store_class is BatchStore:
        assert store.asked == [2, 2]  # never more than the room it has; a full worker does not ask


def test_a_finished_run_makes_room_and_the_next_due_job_starts_without_waiting_a_poll_interval(tmp_path, fakes):
    from crab_schedule.clock import SystemClock

    conf = fakes.settings(tmp_path / "schedule.db", max_running=1, poll_interval=3600.0)
    store = SQLiteJobStore(conf.path)
    clock = SystemClock()
    jobs = [add(store, conf, clock, after=0.05) for _ in range(3)]
    scheduler = Scheduler(conf, store=store, clock=clock, worker="w1")

    async def scenario():
        await asyncio.sleep(0.1)  # due now
        serving = asyncio.ensure_future(scheduler.run(fakes.FakeHandle()))
        for _ in range(3000):
            if len(await store.records()) == 3:
                break
            await asyncio.sleep(0.01)
        await scheduler.stop()
        await serving

    asyncio.run(scenario())
    assert sorted(entry.job_id for entry in asyncio.run(store.records())) == sorted(job.id for job in jobs)


def test_a_job_store_that_fails_for_a_while_is_one_warning_and_one_line_when_it_is_back(tmp_path, fakes):
    clock, conf, _, _ = setup(tmp_path, fakes)

    class Flaky(SQLiteJobStore):
        polls = 0

        async def due(self, now, limit=100):
            Flaky.polls += 1
            if 2 <= Flaky.polls <= 6:
                raise crab.StoreError("job store db:5432: no connection within 10s")
            if Flaky.polls >= 9:
                await scheduler.stop()
            return await super().due(now, limit)

    scheduler = Scheduler(conf, store=Flaky(conf.path), clock=clock, worker="w1")
    handle = fakes.FakeHandle()
    asyncio.run(scheduler.run(handle))
    assert handle.notices == [
        "schedule: job store db:5432: no connection within 10s; trying again every poll",
        "schedule: the job store answers again",
    ]


def test_a_session_no_job_runs_in_has_its_calls_answered_at_once():
    """The hook gives None itself, not a coroutine that gives None: a call costs nothing to await."""
    import crab_schedule

    bash = crab.Tool("bash", "", {"type": "object"}, lambda a, c: "", permission="exec")
    ctx = crab.ToolContext(session_id="s-no-job", workspace=crab.config.crab_home())
    call = crab.messages.ToolCall("c1", "bash", {})
    assert crab_schedule.crab_before_tool_call(call, bash, ctx) is None
    ceiling.hold("s-no-job", "read-only")
    try:
        held = crab_schedule.crab_before_tool_call(call, bash, ctx)
        assert isinstance(asyncio.run(held), crab.hooks.Deny)
    finally:
        ceiling.release("s-no-job", "read-only")
