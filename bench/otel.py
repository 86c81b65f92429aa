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
- the floor: the same spans (names, kinds, parents, attributes) and histogram records made with
  the bare SDK, no crab at all, and the OTLP encoder's cost for one turn's spans.
Runs alternate on/off so load on a shared machine falls on both alike. ``--baseline REV`` measures
that revision's crab-otel beside this checkout's in the same run (each in-process round then runs
in a child process whose ``PYTHONPATH`` puts that side's ``crab_otel`` first), every round going
through both sides, and prints each figure's range. Target: at most 5% more CPU per turn with the
plugin on (the in-process figure). Printed, never asserted.

    python bench/otel.py [--turns 200] [--runs 9] [--baseline main]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

# Run as a script, this folder is first on sys.path, and its http.py would shadow the standard
# library's http (which the OTLP exporter imports).
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
ROOT = Path(__file__).resolve().parent.parent

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


CASES = ("off", "on", "on, content captured")


def case_agent(case: str, folder: str) -> crab.Agent:
    """The agent of one in-process case."""
    base = ["provider-mock", "tools-basic"]
    settings = {"plugins.otel.capture_content": True} if case == "on, content captured" else None
    return crab.Agent(
        model="mock/tour",
        plugins=base if case == "off" else [*base, "otel"],
        workspace=folder,
        settings=settings,
        user_config=False,
        project_config=False,
    )


def case_in_child(case: str, turns: int, folder: str, env: dict[str, str]) -> float:
    """``per_turn`` of one case in a new process (``env`` chooses whose crab-otel it imports)."""
    output = subprocess.run(
        [sys.executable, __file__, "--child", case, "--turns", str(turns), "--folder", folder],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(json.loads(output.strip().splitlines()[-1]))


def library_figures(
    turns: int, rounds: int, folder: str, sides: dict[str, dict[str, str]] | None
) -> dict[str, dict[str, list[float]]]:
    """Per side, per case, the ms per turn of each round; without sides, this process is the one side."""
    figures: dict[str, dict[str, list[float]]] = {side: {case: [] for case in CASES} for side in sides or ["this"]}
    for _ in range(rounds):
        for case in CASES:
            for side, taken in figures.items():
                if sides is None:
                    with case_agent(case, folder) as running:
                        taken[case].append(per_turn(running, turns))
                else:
                    taken[case].append(case_in_child(case, turns, folder, sides[side]))
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


def replay(spans: Any, calls: list[tuple[Any, ...]]) -> None:
    for call in calls:
        if call[0] == "event":
            spans.event(call[1], call[2])
        elif call[0] == "model":
            spans.before_model_call(call[1], call[2])
        else:
            spans.before_tool_call(call[1], call[2], call[3])


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
            replay(spans, calls)
        figures[kind] = (time.process_time() - start) * 1e6 / turns
    figures.update(floor(calls, turns))
    return figures


def floor(calls: list[tuple[Any, ...]], turns: int) -> dict[str, float]:
    """What the bare SDK costs for the very spans and histogram records crab-otel makes in one
    turn, with no crab code in between (captured once, then made again straight from the SDK),
    and what the OTLP encoder costs for them."""
    from crab_otel.spans import Metrics, SpanBook
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    class Nothing(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    captured = InMemorySpanExporter()
    capturing = TracerProvider(shutdown_on_exit=False)
    capturing.add_span_processor(SimpleSpanProcessor(captured))
    records: list[tuple[str, float, dict[str, Any]]] = []

    class Histogram:
        def __init__(self, name: str) -> None:
            self.name = name

        def record(self, amount: float, attributes: dict[str, Any]) -> None:
            records.append((self.name, amount, dict(attributes)))

    metrics = Metrics(Histogram("duration"), Histogram("tokens"))  # type: ignore[arg-type]
    replay(
        SpanBook(capturing.get_tracer("bench"), agent_name="crab", provider="mock", model="tour", metrics=metrics),
        calls,
    )
    made = sorted(captured.get_finished_spans(), key=lambda span: span.start_time or 0)
    if len(made) != 8 or len(records) != 12:
        raise SystemExit(f"the replayed turn made {len(made)} spans and {len(records)} records, not 8 and 12")
    parents = [
        next((i for i, other in enumerate(made) if span.parent and other.context.span_id == span.parent.span_id), None)
        for span in made
    ]
    ends = sorted(range(len(made)), key=lambda i: made[i].end_time or 0)
    shapes = [(span.name, span.kind, dict(span.attributes or {})) for span in made]

    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(Nothing()))
    tracer = provider.get_tracer("bench")
    meter = MeterProvider(metric_readers=[InMemoryMetricReader()], shutdown_on_exit=False).get_meter("bench")
    histograms = {"duration": Metrics.on(meter).duration, "tokens": Metrics.on(meter).tokens}

    def bare_turn(with_metrics: bool) -> None:
        opened: list[Any] = []
        for (name, kind, attributes), parent in zip(shapes, parents, strict=True):
            context = trace.set_span_in_context(opened[parent]) if parent is not None else None
            opened.append(tracer.start_span(name, context=context, kind=kind, attributes=attributes))
        for i in ends:
            opened[i].end()
        if with_metrics:
            for name, amount, attributes in records:
                histograms[name].record(amount, attributes)

    figures = {}
    for label, with_metrics in (("bare SDK: the same 8 spans", False), ("bare SDK: spans and 12 records", True)):
        start = time.process_time()
        for _ in range(turns):
            bare_turn(with_metrics)
        figures[label] = (time.process_time() - start) * 1e6 / turns
    start = time.process_time()
    for _ in range(max(1, turns // 10)):
        encode_spans(made).SerializeToString()
    figures["OTLP encoding of the 8 spans"] = (time.process_time() - start) * 1e6 / max(1, turns // 10)
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


def baseline_source(revision: str, into: Path) -> Path:
    """``plugins/otel/src`` of ``revision``, extracted from git into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "plugins/otel/src"], capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "plugins" / "otel" / "src"


def spread(values: list[float], unit: str, digits: int) -> str:
    return f"{statistics.median(values):7.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def child(case: str, turns: int, folder: str) -> None:
    """One in-process measurement for a parent ``--baseline`` run: prints ms per turn as JSON."""
    with case_agent(case, folder) as running:
        print(json.dumps(per_turn(running, turns)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=200, help="tour turns per measurement")
    parser.add_argument("--runs", type=int, default=9, help="crab run processes per case, and in-process rounds")
    parser.add_argument("--baseline", help="a git revision whose crab-otel to measure beside this checkout's")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.child:
        child(options.child, options.turns, options.folder)
        return
    receiver, url = start_receiver()
    folder = tempfile.mkdtemp(prefix="crab-bench-otel-")
    saved = {k: os.environ.get(k) for k in ("OTEL_EXPORTER_OTLP_ENDPOINT",)}
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = url
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "PYTHONPATH"))}
    sides: dict[str, dict[str, str]] | None = None
    extracted = Path(tempfile.mkdtemp(prefix="crab-bench-otel-base-"))
    try:
        if options.baseline:
            old = baseline_source(options.baseline, extracted)
            sides = {
                options.baseline: dict(env, PYTHONPATH=str(old)),
                "this checkout": dict(env, PYTHONPATH=str(ROOT / "plugins" / "otel" / "src")),
            }
        figures = library_figures(options.turns, max(1, options.runs // 3), folder, sides)
        runs: dict[tuple[str, str], list[float]] = {}
        for _ in range(options.runs):
            for side, side_env in (sides or {"this": env}).items():
                for name in ("off", "on"):
                    plugins = "provider-mock,tools-basic" + (",otel" if name == "on" else "")
                    runs.setdefault((side, name), []).append(run_cpu(dict(side_env, CRAB_PLUGINS=plugins), folder))
    finally:
        for key, kept in saved.items():
            if kept is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = kept
        receiver.terminate()
        receiver.wait()
        shutil.rmtree(extracted, ignore_errors=True)
    for side, cases in figures.items():
        rounds = len(cases["off"])
        title = "" if sides is None else f"[{side}] "
        print(f"{title}CPU per tour turn in one process (median (range) of {rounds} rounds of {options.turns} turns):")
        off = statistics.median(cases["off"])
        for name, values in cases.items():
            change = (statistics.median(values) / off - 1) * 100
            print(f"  otel {name:<22} {spread(values, 'ms', 3)}  {change:+.1f}% vs off")
        print(f"{title}CPU of a whole `crab run -m mock/tour hi` (median (range) of {options.runs}):")
        run_off = statistics.median(runs[(side, "off")])
        for name in ("off", "on"):
            values = runs[(side, name)]
            change = (statistics.median(values) / run_off - 1) * 100
            print(f"  otel {name:<22} {spread(values, 'ms', 1)}  {change:+.1f}% vs off")
    print(f"Where it goes (this checkout): one tour turn's hook calls replayed {options.turns * 10} times:")
    for name, value in breakdown(folder, options.turns * 10).items():
        print(f"  {name:<34} {value:7.1f} µs per turn")


if __name__ == "__main__":
    main()
