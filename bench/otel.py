"""crab-otel's cost: CPU per turn of the scripted tour (crab-provider-mock's ``mock/tour``: four
model calls, three read-only tool calls) with the plugin on and off, in one run.

Two figures, side by side:
- in one process (``crab.Agent``, the library), CPU time (``time.process_time``: every thread of
  the process, so the exporter's background thread counts) per turn, each turn a new session,
  after a warm-up turn; "on" exports OTLP/HTTP to a collector stand-in in another process on
  127.0.0.1 (its CPU is not crab's), with and without content capture;
- a whole ``crab run -m mock/tour hi`` (CPU of the child from ``wait4``, median), which adds what
  starting the SDK and its exporter costs once per process.
- where the plugin's share goes: one tour turn's hook calls (recorded once) replayed into
  crab-otel's ``SpanBook`` with a no-op tracer (crab-otel's own code), with the SDK's tracer and
  a batch processor whose exporter does nothing (plus the SDK's spans), and with the metrics too.
Runs alternate on/off so load on a shared machine falls on both alike. Target: at most 5% more
CPU per turn with the plugin on (the in-process figure). Printed, never asserted.

    python bench/otel.py [--turns 200] [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Run as a script, this folder is first on sys.path, and its http.py would shadow the standard
# library's http (which the OTLP exporter imports).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import crab  # noqa: E402

RECEIVER = """
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass

server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


def start_receiver() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, "-c", RECEIVER], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    return process, f"http://127.0.0.1:{port}"


def per_turn(agent: crab.Agent, turns: int) -> float:
    """Milliseconds of process CPU per tour turn, each in a new session."""
    agent.run_sync("hi")  # warm-up: imports, caches, the first export
    start = time.process_time()
    for _ in range(turns):
        result = agent.run_sync("hi")
        if result.stop != "end" or len(result.tool_calls) != 3:
            raise SystemExit(f"the tour did not run: {result.stop} {result.error}")
    return (time.process_time() - start) * 1000 / turns


def library_figures(turns: int, rounds: int, folder: str) -> dict[str, list[float]]:
    base = ["provider-mock", "tools-basic"]

    def agent(plugins: list[str], capture: bool = False) -> crab.Agent:
        settings = {"plugins.otel.capture_content": True} if capture else None
        return crab.Agent(
            model="mock/tour",
            plugins=plugins,
            workspace=folder,
            settings=settings,
            user_config=False,
            project_config=False,
        )

    made: dict[str, Callable[[], crab.Agent]] = {
        "off": lambda: agent(base),
        "on": lambda: agent([*base, "otel"]),
        "on, content captured": lambda: agent([*base, "otel"], capture=True),
    }
    figures: dict[str, list[float]] = {name: [] for name in made}
    for _ in range(rounds):
        for name, build in made.items():
            with build() as running:
                figures[name].append(per_turn(running, turns))
    return figures


def recorded_turn(folder: str) -> list[tuple[Any, ...]]:
    """The hook calls crab-otel gets in one tour turn (the second one: caches warm)."""
    from crab.testing import AgentHarness, ScriptedProvider, load_script
    from crab_provider_mock.provider import packaged_scripts

    calls: list[tuple[Any, ...]] = []

    class Recorder:
        @crab.hookimpl
        def crab_event(self, event: crab.events.Event, session_id: str) -> None:
            calls.append(("event", event, session_id))

        @crab.hookimpl
        def crab_before_model_call(self, request: crab.ModelRequest, session_id: str) -> None:
            calls.append(("model", request, session_id))

        @crab.hookimpl(tryfirst=True)
        def crab_before_tool_call(self, call: crab.messages.ToolCall, tool: crab.Tool, ctx: crab.ToolContext) -> None:
            calls.append(("tool", call, tool, ctx))

    import crab_tools_basic

    replies, _ = load_script(str(packaged_scripts()["tour"]))
    plugins = {"tools-basic": crab_tools_basic, "recorder": Recorder()}
    harness = AgentHarness(provider=ScriptedProvider(replies, loop=True), plugins=plugins, workspace=Path(folder))
    try:
        harness.run("hi")
        calls.clear()
        harness.run("hi")
    finally:
        harness.close()
    return calls


def breakdown(folder: str, turns: int) -> dict[str, float]:
    """Microseconds of CPU per replayed turn: crab-otel's code alone, with SDK spans, with metrics."""
    from crab_otel.spans import Metrics, SpanBook
    from opentelemetry import trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Nothing(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    calls = recorded_turn(folder)

    def book(kind: str) -> SpanBook:
        if kind == "crab-otel's code (no-op tracer)":
            return SpanBook(trace.NoOpTracer(), agent_name="crab", provider="mock", model="tour")
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(BatchSpanProcessor(Nothing()))
        metrics = None
        if kind.endswith("metrics"):
            meters = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False)
            metrics = Metrics.on(meters.get_meter("bench"))
        return SpanBook(provider.get_tracer("bench"), agent_name="crab", provider="mock", model="tour", metrics=metrics)

    figures = {}
    for kind in ("crab-otel's code (no-op tracer)", "+ SDK spans", "+ SDK spans and metrics"):
        spans = book(kind)
        start = time.process_time()
        for _ in range(turns):
            for call in calls:
                if call[0] == "event":
                    spans.event(call[1], call[2])
                elif call[0] == "model":
                    spans.before_model_call(call[1], call[2])
                else:
                    spans.before_tool_call(call[1], call[2], call[3])
        figures[kind] = (time.process_time() - start) * 1e6 / turns
    return figures


def run_cpu(env: dict[str, str], folder: str) -> float:
    process = subprocess.Popen(
        [sys.executable, "-m", "crab", "run", "-m", "mock/tour", "hi"],
        env=env,
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(process.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("crab run -m mock/tour hi failed")
    return (usage.ru_utime + usage.ru_stime) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="tour turns per measurement")
    parser.add_argument("--runs", type=int, default=9, help="crab run processes per case, and in-process rounds")
    options = parser.parse_args()
    receiver, url = start_receiver()
    folder = tempfile.mkdtemp(prefix="crab-bench-otel-")
    saved = {k: os.environ.get(k) for k in ("OTEL_EXPORTER_OTLP_ENDPOINT",)}
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
    try:
        figures = library_figures(options.turns, max(1, options.runs // 3), folder)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CRAB_")}
        cases = {
            "off": dict(env, CRAB_PLUGINS="provider-mock,tools-basic"),
            "on": dict(env, CRAB_PLUGINS="provider-mock,tools-basic,otel"),
        }
        runs: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(options.runs):
            for name, case_env in cases.items():
                runs[name].append(run_cpu(case_env, folder))
    finally:
        for key, kept in saved.items():
            if kept is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = kept
        receiver.terminate()
        receiver.wait()
    off = statistics.median(figures["off"])
    print(f"CPU per tour turn in one process (median of {len(figures['off'])} rounds of {options.turns} turns):")
    for name, values in figures.items():
        value = statistics.median(values)
        print(f"  otel {name:<22} {value:7.3f} ms  ({(value / off - 1) * 100:+.1f}% vs off)")
    run_off = statistics.median(runs["off"])
    print(f"CPU of a whole `crab run -m mock/tour hi` (median of {options.runs}):")
    for name, values in runs.items():
        value = statistics.median(values)
        print(f"  otel {name:<22} {value:7.1f} ms  ({(value / run_off - 1) * 100:+.1f}% vs off)")
    print(f"Where it goes: one tour turn's hook calls replayed {options.turns * 10} times:")
    for name, value in breakdown(folder, options.turns * 10).items():
        print(f"  {name:<34} {value:7.1f} µs per turn")


if __name__ == "__main__":
    main()
