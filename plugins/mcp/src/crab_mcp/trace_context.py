"""The trace context of the running span for a request's ``params._meta`` (``traceparent``,
``tracestate``: the OpenTelemetry MCP conventions' propagation), when something in the process
traces with OpenTelemetry (crab-otel, a program's own setup). crab-mcp does not depend on it."""

from __future__ import annotations

import sys


def trace_meta(method: str) -> dict[str, str] | None:
    """``_meta`` entries carrying the current span's context to the server, and ``mcp.method.name``
    on that span (the conventions: an MCP call inside a traced tool call adds to its span rather
    than making another); None when OpenTelemetry is not in use here (nothing imported it: no span
    can be running) or no span is."""
    if "opentelemetry.context" not in sys.modules:
        return None
    from opentelemetry import propagate, trace

    span = trace.get_current_span()
    if not span.get_span_context().is_valid:
        return None
    span.set_attribute("mcp.method.name", method)
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier or None
