"""``run_in_thread``: blocking calls on worker threads that are kept for the next call, never
joined at exit, and never handed a call while an abandoned one still runs on them."""

from __future__ import annotations

import asyncio
import contextvars
import subprocess
import sys
import textwrap
import threading

from crab._system import watchdog
from crab._system.threads import run_in_thread

where: contextvars.ContextVar[str] = contextvars.ContextVar("where", default="unset")


class Ctx:
    def __init__(self) -> None:
        self.cancelled = threading.Event()


def test_a_finished_call_s_thread_runs_the_next_call() -> None:
    async def main() -> list[threading.Thread]:
        seen = []
        for _ in range(3):
            seen.append(await run_in_thread(threading.current_thread, {}))
        return seen

    first, second, third = asyncio.run(main())
    assert first is second is third  # one worker, not a thread per call
    assert first is not threading.main_thread() and first.daemon
    assert first not in watchdog.alive_threads()  # waiting for work is not running a tool


def test_each_call_runs_in_a_copy_of_its_caller_s_context() -> None:
    def read_and_set() -> str:
        seen = where.get()
        where.set("changed by the call")
        return seen

    async def main() -> list[str]:
        where.set("first")
        one = await run_in_thread(read_and_set, {})
        where.set("second")
        two = await run_in_thread(read_and_set, {})
        return [one, two, where.get()]

    assert asyncio.run(main()) == ["first", "second", "second"]


def test_an_abandoned_call_keeps_its_thread_until_it_returns() -> None:
    release = threading.Event()
    started = threading.Event()
    ran_on: list[threading.Thread] = []

    def stuck() -> threading.Thread:
        ran_on.append(threading.current_thread())
        started.set()
        release.wait(60)
        return threading.current_thread()

    async def main() -> tuple[threading.Thread, threading.Thread, bool, bool]:
        ctx = Ctx()
        task = asyncio.ensure_future(run_in_thread(stuck, {}, ctx))
        await asyncio.to_thread(started.wait, 60)
        stuck_thread = ran_on[0]
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        other = await run_in_thread(threading.current_thread, {})
        watched = stuck_thread in watchdog.alive_threads()
        return stuck_thread, other, ctx.cancelled.is_set(), watched

    try:
        stuck_thread, other, cancelled, watched = asyncio.run(main())
    finally:
        release.set()
    assert cancelled  # the function is told to stop itself
    assert other is not stuck_thread  # the next call does not wait behind the abandoned one
    assert watched  # the watchdog still sees the abandoned call run


def test_failures_come_back_as_the_call_s_exception() -> None:
    def fails() -> None:
        raise ValueError("bad input")

    def exits() -> None:
        raise SystemExit(3)

    async def main() -> list[str]:
        seen = []
        for fn in (fails, exits):
            try:
                await run_in_thread(fn, {})
            except Exception as exc:
                seen.append(f"{type(exc).__name__}: {exc}")
        return seen

    assert asyncio.run(main()) == ["ValueError: bad input", "RuntimeError: SystemExit raised in the tool"]


def test_a_stuck_call_does_not_hold_the_process_s_exit() -> None:
    # In a process of its own: the stuck call never returns, and the interpreter must still end.
    script = textwrap.dedent(
        """
        import asyncio, threading, time
        from crab._system.threads import run_in_thread

        def stuck():
            threading.Event().wait()

        async def main():
            await run_in_thread(time.monotonic, {})  # a worker kept waiting for work
            try:
                async with asyncio.timeout(0.2):
                    await run_in_thread(stuck, {})
            except TimeoutError:
                print("gave up", flush=True)

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "gave up\n"


def test_the_watchdog_s_heartbeat_outlives_a_call_for_the_next_one() -> None:
    # In a process of its own: an enabled watchdog may end the process it runs in.
    script = textwrap.dedent(
        """
        import asyncio, threading, time
        from crab._system import watchdog
        from crab._system.threads import run_in_thread

        def heartbeats():
            return [t for t in threading.enumerate() if t.name == "crab-watchdog-heartbeat"]

        async def main():
            await run_in_thread(time.monotonic, {})
            first = heartbeats()
            seen = watchdog.ticks
            deadline = time.monotonic() + 30
            while watchdog.ticks < seen + 3:  # three ticks with no tool running
                assert time.monotonic() < deadline and heartbeats() == first, "the heartbeat ended"
                await asyncio.sleep(0.01)
            await run_in_thread(time.monotonic, {})
            assert len(first) == 1 and heartbeats() == first, (first, heartbeats())
            print("one heartbeat", flush=True)

        watchdog.enable()
        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "one heartbeat\n"


def test_calls_ending_together_each_get_their_own_outcome_in_every_loop() -> None:
    """Outcomes are handed back to the loop together (one wake-up settles every one waiting):
    each call still gets its own value or exception, in each of several loops one after another."""

    def answer(n: int) -> int:
        if n % 7 == 0:
            raise ValueError(f"no {n}")
        return n * 2

    async def main() -> list[object]:
        ended = await asyncio.gather(*(run_in_thread(answer, {"n": n}) for n in range(200)), return_exceptions=True)
        return [f"{type(e).__name__}: {e}" if isinstance(e, BaseException) else e for e in ended]

    expected = [f"ValueError: no {n}" if n % 7 == 0 else n * 2 for n in range(200)]
    for _ in range(3):  # a loop that ended leaves nothing behind that the next one waits for
        assert asyncio.run(main()) == expected


def test_a_call_ending_after_its_loop_closed_does_not_stop_the_next_loop_s_calls() -> None:
    release = threading.Event()
    started = threading.Event()

    def late() -> str:
        started.set()
        release.wait(60)
        return "late"

    async def abandon() -> None:
        task = asyncio.ensure_future(run_in_thread(late, {}, Ctx()))
        await asyncio.to_thread(started.wait, 60)
        task.cancel()

    asyncio.run(abandon())  # the loop closes with the call still running
    release.set()  # it ends now, with nowhere to hand its outcome

    async def later() -> list[int]:
        return list(await asyncio.gather(*(run_in_thread(lambda n=n: n, {}) for n in range(50))))

    assert asyncio.run(later()) == list(range(50))
