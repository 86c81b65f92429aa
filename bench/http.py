"""Benchmark of crab-http: a scripted one-reply turn through the HTTP API beside the same turn
through ``crab run``, and the server's memory with 50 streams open.

Through the API, one ``crab serve http`` process answers every turn: requests per second and
p50/p99 latency, sequential and 8 at a time, for crab's SSE API (``POST
/v1/sessions/{id}/messages``) and the OpenAI-compatible ``POST /v1/chat/completions``, and the
server's CPU per turn. Through ``crab run``, each turn is a new process (what a script calling
crab per request pays). Memory: the server's RSS idle, then with 50 turns streaming at once.

Usage: ``.venv/bin/python bench/http.py [--turns 200] [--runs 10]``. Needs crab-http and
crab-provider-mock (the scripted ``mock`` provider).
"""

from __future__ import annotations

import os
import sys

# Run as `python bench/http.py`, this file's folder comes first on sys.path and its name would
# hide the standard library's `http` package (which httpx imports): take the folder off first.
_HERE = os.path.dirname(os.path.realpath(__file__))
sys.path[:] = [p for p in sys.path if os.path.realpath(p or ".") != _HERE]

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import httpx  # noqa: E402

ONE_REPLY = {"replies": [[{"text": "Hello from crab."}]], "loop": True}
SLOW_REPLY = {
    "replies": [[step for i in range(60) for step in ({"delay": 0.5}, {"text": f"part {i}. "})]],
    "loop": True,
}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Server:
    def __init__(self, home: Path, work: Path, env: dict[str, str], script: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "crab", "serve", "http", "-m", f"mock/{script}"],
            env=env,
            cwd=work,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            found = re.search(r"listening on (http://[\d.]+:\d+)/", line)
            if found:
                self.url = found.group(1)
                break
        else:
            raise SystemExit(f"crab serve http did not start: {self.proc.wait()}")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr or []], daemon=True).start()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


async def timed(label: str, turns: int, concurrency: int, one: Any) -> dict[str, float]:
    latencies: list[float] = []
    queue = list(range(turns))

    async def worker() -> None:
        while queue:
            n = queue.pop()
            start = time.perf_counter()
            await one(n)
            latencies.append(time.perf_counter() - start)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - began
    return {"rps": turns / wall, "p50": percentile(latencies, 0.5) * 1000, "p99": percentile(latencies, 0.99) * 1000}


async def api_figures(url: str, token: str, turns: int, pid: int) -> list[tuple[str, dict[str, float]]]:
    auth = {"Authorization": f"Bearer {token}"}
    rows = []
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=100)) as client:

        async def sse_turn(n: int) -> None:
            sid = (await client.post("/v1/sessions", headers=auth, json={})).json()["id"]
            async with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "hi"}) as r:
                async for line in r.aiter_lines():
                    if '"turn_end"' in line:
                        assert "Hello from crab." in line
                        break

        async def openai_turn(n: int) -> None:
            body = {"model": "x", "messages": [{"role": "user", "content": "hi"}], "user": f"bench-{n}"}
            answer = (await client.post("/v1/chat/completions", headers=auth, json=body)).json()
            assert answer["choices"][0]["message"]["content"] == "Hello from crab."

        await sse_turn(-1)  # warm up
        for label, one in (("crab API (SSE)", sse_turn), ("OpenAI API", openai_turn)):
            for concurrency in (1, 8):
                before = cpu_of(pid)
                figures = await timed(label, turns, concurrency, one)
                figures["cpu_ms"] = (cpu_of(pid) - before) / turns * 1000
                rows.append((f"{label}, {concurrency} at a time", figures))
    return rows


def run_figures(work: Path, env: dict[str, str], script: Path, runs: int) -> dict[str, float]:
    latencies = []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    for _ in range(runs):
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "crab", "run", "-m", f"mock/{script}", "hi"],
            env=env,
            cwd=work,
            capture_output=True,
            text=True,
        )
        latencies.append(time.perf_counter() - start)
        assert "Hello from crab." in done.stdout, done.stderr
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) / runs * 1000
    return {
        "rps": runs / sum(latencies),
        "p50": percentile(latencies, 0.5) * 1000,
        "p99": percentile(latencies, 0.99) * 1000,
        "cpu_ms": cpu,
    }


async def open_streams(url: str, token: str, count: int, pid: int) -> tuple[float, float]:
    auth = {"Authorization": f"Bearer {token}"}
    idle = rss_mib(pid)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=httpx.Limits(max_connections=count + 10)) as client:
        sids = [(await client.post("/v1/sessions", headers=auth, json={})).json()["id"] for _ in range(count)]
        started = asyncio.Event()
        first = 0

        async def stream(sid: str) -> None:
            nonlocal first
            async with client.stream("POST", f"/v1/sessions/{sid}/messages", headers=auth, json={"text": "go"}) as r:
                async for line in r.aiter_lines():
                    if '"text_delta"' in line:
                        first += 1
                        if first == count:
                            started.set()
                        await asyncio.sleep(3600)

        tasks = [asyncio.create_task(stream(sid)) for sid in sids]
        await asyncio.wait_for(started.wait(), 60)
        busy = rss_mib(pid)
        for sid in sids:
            await client.post(f"/v1/sessions/{sid}/abort", headers=auth)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return idle, busy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="turns per API figure")
    parser.add_argument("--runs", type=int, default=10, help="crab run processes")
    parser.add_argument("--streams", type=int, default=50, help="streams open at once for the memory figure")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        home, work = root / "home", root / "work"
        home.mkdir()
        work.mkdir()
        (home / "config.toml").write_text("[plugins.http]\nport = 0\nrate_limit = 1000000\n")
        (work / "one.json").write_text(json.dumps(ONE_REPLY))
        (work / "slow.json").write_text(json.dumps(SLOW_REPLY))
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        env.update(CRAB_HOME=str(home), CRAB_PLUGINS="http,provider-mock")
        token = subprocess.run(
            [sys.executable, "-m", "crab", "http", "token", "create", "bench"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

        server = Server(home, work, env, Path("one.json"))
        try:
            rows = asyncio.run(api_figures(server.url, token, args.turns, server.proc.pid))
        finally:
            server.close()
        rows.append(
            (f"crab run (a process per turn, {args.runs} runs)", run_figures(work, env, Path("one.json"), args.runs))
        )

        print(f"one scripted one-reply turn ({args.turns} per API row)")
        print(f"{'path':<44} {'turns/s':>9} {'p50 ms':>9} {'p99 ms':>9} {'CPU ms/turn':>12}")
        for label, f in rows:
            print(f"{label:<44} {f['rps']:>9.1f} {f['p50']:>9.1f} {f['p99']:>9.1f} {f['cpu_ms']:>12.2f}")
        base = rows[-1][1]
        best = rows[0][1]
        print(
            f"sequential crab API vs crab run: {best['rps'] / base['rps']:.1f}x the turns/s, "
            f"{base['p50'] / best['p50']:.1f}x lower p50"
        )

        server = Server(home, work, env, Path("slow.json"))
        try:
            idle, busy = asyncio.run(open_streams(server.url, token, args.streams, server.proc.pid))
        finally:
            server.close()
        print(
            f"server RSS: {idle:.1f} MiB idle, {busy:.1f} MiB with {args.streams} streams open "
            f"({(busy - idle) * 1024 / args.streams:.0f} KiB per stream)"
        )


if __name__ == "__main__":
    main()
