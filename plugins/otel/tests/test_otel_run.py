"""crab-otel end to end: one real ``crab run`` (a scripted provider in a site folder, crab-tools-basic's
``read``, a crab-subagents child, a real MCP server over stdio) exporting OTLP/HTTP to a receiver on
127.0.0.1, whose requests are decoded with the collector's own protobuf types (opentelemetry-proto)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

HERE = Path(__file__).parent
HEADER_TOKEN = "e2e-otlp-token-0123456789abcdef"


def value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(value(x) for x in v.array_value.values)
    return getattr(v, kind) if kind else None


def spans_of(bodies: list[bytes]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every span as a dict (name, ids as hex, kind, attributes) and the resource's attributes."""
    spans, resource = [], {}
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            resource.update({a.key: value(a.value) for a in rs.resource.attributes})
            for ss in rs.scope_spans:
                for s in ss.spans:
                    spans.append(
                        {
                            "name": s.name,
                            "trace": s.trace_id.hex(),
                            "id": s.span_id.hex(),
                            "parent": s.parent_span_id.hex() or None,
                            "kind": s.kind,
                            "attributes": {a.key: value(a.value) for a in s.attributes},
                            "status": s.status.code,
                        }
                    )
    return spans, resource


def metric_names(bodies: list[bytes]) -> set[str]:
    names = set()
    for body in bodies:
        for rm in ExportMetricsServiceRequest.FromString(body).resource_metrics:
            for sm in rm.scope_metrics:
                names.update(m.name for m in sm.metrics)
    return names


def task(agent: str) -> dict[str, Any]:
    return {"tool": "task", "id": "t1", "args": {"description": f"ask {agent}", "prompt": "check", "agent": agent}}


def run(
    crab_site: Any, receiver: Any, tmp_path: Path, *, endpoint: str | None = None
) -> subprocess.CompletedProcess[str]:
    home, work = tmp_path / "home", tmp_path / "work"
    (home / "agents").mkdir(parents=True)
    work.mkdir()
    (work / "notes.txt").write_text("the notes\n", encoding="utf-8")
    (home / "agents" / "alpha.md").write_text(
        "---\nname: alpha\ndescription: the alpha agent\ntools: Read\n---\nBe alpha.\n", encoding="utf-8"
    )
    probe = {"command": sys.executable, "args": [str(HERE / "otel_mcp_probe.py")], "permission": "read"}
    (home / "config.toml").write_text(
        "[plugins.mcp]\nstartup_wait = 300\n"  # a loaded machine: the server must be up for the first call
        f"[plugins.mcp.servers.probe]\ncommand = {json.dumps(probe['command'])}\n"
        f'args = {json.dumps(probe["args"])}\npermission = "read"\n',
        encoding="utf-8",
    )
    crab_site.script(
        [
            [
                {"tool": "read", "id": "r1", "args": {"path": "notes.txt"}},
                {"tool": "probe_trace_probe", "id": "m1", "args": {}},
                task("alpha"),
                {"usage": {"input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 30}},
            ],
            [{"text": "alpha here"}, {"usage": {"input_tokens": 20, "output_tokens": 2}}],
            [{"text": "all done"}, {"usage": {"input_tokens": 200, "output_tokens": 20}}],
        ]
    )
    extra = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint or receiver.url,
        "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer%20{HEADER_TOKEN}",
        "OTEL_SERVICE_NAME": "crab-e2e",
    }
    env = crab_site.env("fake,otel,mcp,subagents,tools-basic", home=home, extra=extra)
    args = [sys.executable, "-m", "crab", "run", "-m", "fake/script", "read the notes, probe, ask alpha"]
    return subprocess.run(args, env=env, cwd=work, capture_output=True, text=True, timeout=300)


def test_crab_run_exports_one_trace_of_genai_spans_over_otlp_http(
    crab_site: Any, receiver: Any, tmp_path: Path
) -> None:
    done = run(crab_site, receiver, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "all done" in done.stdout
    spans, resource = spans_of(receiver.bodies("/v1/traces"))
    assert resource["service.name"] == "crab-e2e"
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    (root,) = by_name["invoke_agent crab"]
    assert root["parent"] is None and {s["trace"] for s in spans} == {root["trace"]}
    (read,) = by_name["execute_tool read"]
    (mcp,) = by_name["execute_tool probe_trace_probe"]
    (task_span,) = by_name["execute_tool task"]
    (child,) = by_name["invoke_agent alpha"]
    assert {read["parent"], mcp["parent"], task_span["parent"]} == {root["id"]}
    assert child["parent"] == task_span["id"]
    chats = by_name["chat script"]
    assert sorted(c["parent"] for c in chats) == sorted([root["id"], root["id"], child["id"]])
    assert all(c["kind"] == 3 for c in chats)  # SPAN_KIND_CLIENT
    first = next(c for c in chats if c["attributes"].get("gen_ai.usage.output_tokens") == 10)
    assert first["attributes"]["gen_ai.usage.input_tokens"] == 130
    assert first["attributes"]["gen_ai.usage.cache_read.input_tokens"] == 30
    assert first["attributes"]["gen_ai.provider.name"] == "fake"
    assert first["attributes"]["gen_ai.response.finish_reasons"] == ("tool_call",)
    assert root["attributes"]["gen_ai.conversation.id"] != child["attributes"]["gen_ai.conversation.id"]
    assert root["attributes"]["gen_ai.usage.output_tokens"] == 10 + 2 + 20
    # The MCP call carried the execute_tool span's context to the server (params._meta.traceparent).
    assert mcp["attributes"]["mcp.method.name"] == "tools/call"
    sent = crab_site.requests()[-1]["messages"]
    results = [m for m in sent if m["role"] == "tool" or m.get("call_id") == "m1"]
    probe_said = next(m["content"] for m in results if "traceparent" in m["content"])
    assert f'"traceparent": "00-{root["trace"]}-{mcp["id"]}-0' in probe_said  # then the flags: sampled
    assert '"progress": true' in probe_said  # the progress token crab-mcp sends is kept beside it
    # Metrics, and the header reached the collector without being written anywhere by crab.
    assert {"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} <= metric_names(
        receiver.bodies("/v1/metrics")
    )
    assert {h.get("authorization") for _, h, _ in receiver.requests} == {f"Bearer {HEADER_TOKEN}"}
    assert HEADER_TOKEN not in done.stdout + done.stderr
    for path in (tmp_path / "home").rglob("*"):
        if path.is_file():
            assert HEADER_TOKEN.encode() not in path.read_bytes(), path


def test_an_unreachable_collector_is_one_warning_and_the_turn_still_answers(
    crab_site: Any, receiver: Any, tmp_path: Path
) -> None:
    closed = receiver.url  # a port nothing listens on once the receiver is closed
    receiver.close()
    done = run(crab_site, receiver, tmp_path, endpoint=closed)
    assert done.returncode == 0, done.stderr
    assert "all done" in done.stdout
    warnings = [line for line in done.stderr.splitlines() if "did not take the telemetry" in line]
    assert len(warnings) == 1, done.stderr
    assert HEADER_TOKEN not in done.stderr and "Traceback" not in done.stderr


def test_crab_chat_exports_one_trace_per_message(crab_site: Any, receiver: Any, tmp_path: Path) -> None:
    crab_site.script([[{"text": "first answer"}], [{"text": "second answer"}]])
    env = crab_site.env("fake,otel", home=tmp_path / "home", extra={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url})
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "crab", "chat", "-m", "fake/script"],
        env=env,
        cwd=work,
        input="hello\nand again\n/quit\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "first answer" in done.stdout and "second answer" in done.stdout
    spans, _ = spans_of(receiver.bodies("/v1/traces"))
    turns = [s for s in spans if s["name"] == "invoke_agent crab"]
    assert len(turns) == 2 and len({t["trace"] for t in turns}) == 2
    assert len({t["attributes"]["gen_ai.conversation.id"] for t in turns}) == 1  # one session
    for turn in turns:
        (chat,) = [s for s in spans if s["name"] == "chat script" and s["parent"] == turn["id"]]
        assert chat["trace"] == turn["trace"]


def test_crab_serve_http_exports_one_trace_per_message_of_a_session(
    crab_site: Any, receiver: Any, tmp_path: Path
) -> None:
    """``crab serve http``: each message a client posts to one session is its own turn and trace,
    all carrying the session's id; the traces reach the collector while the server keeps running."""
    import re
    import signal
    import threading
    import time

    import httpx

    crab_site.script([[{"text": "first answer"}], [{"text": "second answer"}]])
    home, work = tmp_path / "home", tmp_path / "work"
    work.mkdir()
    home.mkdir()
    (home / "config.toml").write_text("[plugins.http]\nport = 0\nrate_limit = 100000\n", encoding="utf-8")
    extra = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_BSP_SCHEDULE_DELAY": "200",  # spans leave within moments, not at the server's exit
        "OTEL_METRIC_EXPORT_INTERVAL": "500",
    }
    env = crab_site.env("fake,otel,http", home=home, extra=extra)
    made = subprocess.run(
        [sys.executable, "-m", "crab", "http", "token", "create", "laptop"],
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip()
    server = subprocess.Popen(
        [sys.executable, "-m", "crab", "serve", "http", "-m", "fake/script"],
        env=env,
        cwd=work,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(server.stderr or []), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 120
        url = None
        while url is None and time.monotonic() < deadline and server.poll() is None:
            found = [m for line in list(lines) if (m := re.search(r"listening on (http://127\.0\.0\.1:\d+)/", line))]
            url = found[0].group(1) if found else None
            time.sleep(0.05)
        assert url, "".join(lines)
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=url, headers=auth, timeout=120) as client:
            session = client.post("/v1/sessions", json={"title": "traced"}).json()["id"]
            for text in ("hello", "and again"):
                with client.stream("POST", f"/v1/sessions/{session}/messages", json={"text": text}) as reply:
                    assert reply.status_code == 200
                    body = "".join(reply.iter_text())
                assert "answer" in body
        turns: list[dict[str, Any]] = []
        while time.monotonic() < deadline and len(turns) < 2:  # exported on the batch schedule
            spans, _ = spans_of(receiver.bodies("/v1/traces"))
            turns = [s for s in spans if s["name"] == "invoke_agent crab"]
            time.sleep(0.1)
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
        server.communicate(timeout=120)
    assert len(turns) == 2 and len({t["trace"] for t in turns}) == 2, "".join(lines)
    assert {t["attributes"]["gen_ai.conversation.id"] for t in turns} == {session}
    for turn in turns:
        (chat,) = [s for s in spans if s["name"] == "chat script" and s["parent"] == turn["id"]]
        assert chat["trace"] == turn["trace"]
    assert "Traceback" not in "".join(lines)
