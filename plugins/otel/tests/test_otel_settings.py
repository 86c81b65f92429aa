"""crab-otel's configuration: the standard ``OTEL_*`` variables over ``[plugins.otel]``, bad values
as one line and exit 2 (never a header's value), ``crab doctor``'s lines, and the library
(``crab.Agent(plugins=[..., "otel"])``) exporting one trace per turn to a receiver on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

import crab
import pytest
from crab.testing import ScriptedProvider
from crab_otel.runtime import doctor_lines
from crab_otel.settings import DEFAULT_ENDPOINT, load_settings, parse_headers
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SECRET = "hdr-secret-0123456789abcdef"


def test_the_endpoint_comes_from_the_environment_then_the_table_then_the_sdk_default() -> None:
    assert load_settings({}, {}).traces_endpoint == f"{DEFAULT_ENDPOINT}/v1/traces"
    table = {"endpoint": "http://collector.local:4318/"}
    assert load_settings(table, {}).metrics_endpoint == "http://collector.local:4318/v1/metrics"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example:443"}
    assert load_settings(table, env).traces_endpoint == "https://otel.example:443/v1/traces"
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "https://traces.example/ingest"
    assert load_settings(table, env).traces_endpoint == "https://traces.example/ingest"  # taken as it is


def test_standard_variables_service_name_exporters_timeout_and_the_content_opt_in() -> None:
    env = {
        "OTEL_SERVICE_NAME": "my-agent",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_EXPORTER_OTLP_TIMEOUT": "2500",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true",
    }
    settings = load_settings({"service_name": "from-config"}, env)
    assert settings.service_name == "my-agent" and settings.traces and not settings.metrics
    assert settings.export_timeout == 2.5 and settings.capture_content
    assert load_settings({}, {}).service_name == "crab" and not load_settings({}, {}).capture_content
    assert not load_settings({}, {"OTEL_SDK_DISABLED": "true"}).enabled
    both_off = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}
    assert not load_settings({}, both_off).enabled


def test_headers_are_parsed_url_decoded_and_a_bad_one_names_no_value() -> None:
    assert parse_headers(f"Authorization=Bearer%20{SECRET}, x-team = a%2Cb") == (
        ("authorization", f"Bearer {SECRET}"),
        ("x-team", "a,b"),
    )
    with pytest.raises(crab.ConfigError) as bad:
        parse_headers(f"api-key={SECRET},{SECRET}")
    assert "item 2 is not key=value" in str(bad.value) and SECRET not in str(bad.value)


@pytest.mark.parametrize(
    ("name", "value"),
    [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), ("OTEL_TRACES_EXPORTER", "zipkin"), ("OTEL_EXPORTER_OTLP_TIMEOUT", "x")],
)
def test_a_value_crab_otel_cannot_use_is_one_line(name: str, value: str) -> None:
    with pytest.raises(crab.ConfigError) as bad:
        load_settings({}, {name: value})
    assert name in str(bad.value) and "\n" not in str(bad.value)


def test_crab_run_with_a_bad_otel_variable_exits_2_in_one_line(tmp_path: Any) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CRAB_", "OTEL_"))}
    env.update(CRAB_HOME=str(tmp_path), CRAB_PLUGINS="otel", OTEL_EXPORTER_OTLP_PROTOCOL="grpc")
    done = subprocess.run(
        [sys.executable, "-m", "crab", "run", "hi"], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in done.stderr
    assert "Traceback" not in done.stderr


def test_doctor_says_where_telemetry_goes_and_never_a_header(crab_config: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer%20{SECRET}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
    lines = doctor_lines(crab_config({}))
    text = "\n".join(t for _, t in lines)
    assert "spans to http://127.0.0.1:4318/v1/traces" in text and "1 header(s)" in text
    assert SECRET not in text and "Bearer" not in text
    assert all(status != "fail" for status, _ in lines)


def test_the_library_exports_one_trace_per_turn(receiver: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    provider = ScriptedProvider([[{"text": "one"}], [{"text": "two"}]])
    quiet = {"user_config": False, "project_config": False}
    with crab.Agent(provider=provider, plugins=["otel"], workspace=tmp_path, **quiet) as agent:
        first = agent.run_sync("first")
        agent.run_sync("second", session=first.session_id)
    # Closing the agent flushed what the batch processor held.
    deadline = time.monotonic() + 60
    while not receiver.bodies("/v1/traces") and time.monotonic() < deadline:
        time.sleep(0.05)
    spans = [
        span
        for body in receiver.bodies("/v1/traces")
        for rs in ExportTraceServiceRequest.FromString(body).resource_spans
        for ss in rs.scope_spans
        for span in ss.spans
    ]
    turns = [s for s in spans if s.name == "invoke_agent crab"]
    assert len(turns) == 2 and len({s.trace_id for s in turns}) == 2
    assert len([s for s in spans if s.name.startswith("chat ")]) == 2


def test_a_run_awaited_inside_a_programs_own_span_is_its_child() -> None:
    from crab_otel import OtelPlugin
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    out = InMemorySpanExporter()
    program = TracerProvider(shutdown_on_exit=False)
    program.add_span_processor(SimpleSpanProcessor(out))

    async def main() -> None:
        plugin = OtelPlugin(span_exporter=out, metric_reader=InMemoryMetricReader())
        provider = ScriptedProvider([[{"text": "x"}]])
        quiet = {"user_config": False, "project_config": False}
        async with crab.Agent(provider=provider, plugins=[], plugin_objects={"otel": plugin}, **quiet) as agent:
            with program.get_tracer("app").start_as_current_span("request"):
                await agent.run("hi")

    asyncio.run(main())
    spans = {s.name: s for s in out.get_finished_spans()}
    turn, request = spans["invoke_agent crab"], spans["request"]
    assert turn.parent is not None and turn.parent.span_id == request.context.span_id
