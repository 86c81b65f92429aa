"""``[plugins.otel]`` and the standard ``OTEL_*`` variables: the one module of crab-otel that reads
its settings and the environment, into a checked ``OtelSettings``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from crab import ConfigError, ConfigTable, Setting

PLUGIN = "otel"
DEFAULT_ENDPOINT = "http://localhost:4318"
"""Where OTLP/HTTP goes when neither ``OTEL_EXPORTER_OTLP_ENDPOINT`` nor ``endpoint`` says (the SDK's own default)."""
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The variable OpenTelemetry's Python GenAI instrumentations read for the content opt-in."""

TABLE = ConfigTable(
    PLUGIN,
    (
        Setting(
            "endpoint",
            "str",
            doc="OTLP/HTTP base URL (/v1/traces and /v1/metrics are added); OTEL_EXPORTER_OTLP_ENDPOINT wins",
            trust_only=True,
        ),
        Setting("service_name", "str", doc="service.name of the resource; OTEL_SERVICE_NAME wins (default: crab)"),
        Setting("agent_name", "str", "crab", "gen_ai.agent.name of the top-level invoke_agent spans"),
        Setting(
            "capture_content",
            "bool",
            False,
            "record messages, system instructions, tool arguments and results (the conventions' opt-in "
            f"attributes), redacted; {CAPTURE_ENV}=true also turns it on",
            trust_only=True,
        ),
        Setting("max_content_chars", "int", 16_384, "longest recorded content attribute, in characters", minimum=64),
        Setting("metrics", "bool", True, "export gen_ai.client.token.usage and gen_ai.client.operation.duration"),
        Setting(
            "export_timeout", "float", 5.0, "seconds one export may take (OTEL_EXPORTER_OTLP_TIMEOUT wins)", above=0
        ),
        Setting("shutdown_timeout", "float", 3.0, "seconds crab waits at exit for the last export", minimum=0),
    ),
    doc="otel: OpenTelemetry GenAI traces and metrics of every turn, model call and tool call, over OTLP/HTTP",
    check=lambda values: _check_environment(),
)
"""The ``OTEL_*`` variables are checked with the table, so a bad one is one line and exit 2 before
anything runs (not a plugin failing at start-up, which would refuse every model call: crab-otel
intercepts them)."""


def _check_environment() -> None:
    load_settings({})


@dataclass(frozen=True, slots=True)
class OtelSettings:
    """What the exporters and spans need, from ``[plugins.otel]`` and the environment."""

    enabled: bool
    traces: bool
    metrics: bool
    traces_endpoint: str
    metrics_endpoint: str
    headers: tuple[tuple[str, str], ...]
    service_name: str
    agent_name: str
    capture_content: bool
    max_content_chars: int
    export_timeout: float
    shutdown_timeout: float

    @property
    def header_values(self) -> list[str]:
        """The headers' values: keys as often as not, so redacted wherever crab writes."""
        return [value for _, value in self.headers if value]


def _flag(value: str | None) -> bool | None:
    if value is None or not value.strip():
        return None
    return value.strip().lower() in ("1", "true", "yes", "on")


def _endpoint(env: Mapping[str, str], signal: str, base: str) -> str:
    """The OTLP/HTTP URL of ``signal`` by the specification's rule: the per-signal variable as is,
    else the base endpoint with ``/v1/<signal>`` added."""
    specific = env.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip()
    if specific:
        return specific
    return f"{base.rstrip('/')}/v1/{signal}"


def parse_headers(text: str) -> tuple[tuple[str, str], ...]:
    """``OTEL_EXPORTER_OTLP_HEADERS``: ``key=value`` pairs joined by commas, URL-encoded. A pair
    without ``=`` is a configuration error naming its position only (it may be a key put there
    whole)."""
    pairs: list[tuple[str, str]] = []
    for number, item in enumerate(text.split(","), 1):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(
                f"OTEL_EXPORTER_OTLP_HEADERS: item {number} is not key=value; write the headers as "
                "key1=value1,key2=value2 (URL-encoded)"
            )
        pairs.append((unquote(key.strip()).lower(), unquote(value.strip())))
    return tuple(pairs)


def load_settings(table: Mapping[str, Any], env: Mapping[str, str] | None = None) -> OtelSettings:
    """``table`` (``config.plugin_settings("otel")``, checked by core) with the ``OTEL_*``
    variables of ``env`` (default: the process's) applied; ``ConfigError`` for a protocol or
    exporter this plugin does not speak."""
    env = os.environ if env is None else env
    disabled = _flag(env.get("OTEL_SDK_DISABLED")) is True
    for name in (
        "OTEL_EXPORTER_OTLP_PROTOCOL",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
    ):
        protocol = env.get(name, "").strip()
        if protocol and protocol != "http/protobuf":
            raise ConfigError(
                f"{name}={protocol}: crab-otel exports OTLP over HTTP only; set it to http/protobuf or unset it"
            )
    exporters = {}
    for signal in ("traces", "metrics"):
        chosen = env.get(f"OTEL_{signal.upper()}_EXPORTER", "otlp").strip().lower() or "otlp"
        if chosen not in ("otlp", "none"):
            raise ConfigError(
                f"OTEL_{signal.upper()}_EXPORTER={chosen}: crab-otel exports with otlp (or none); set one of those"
            )
        exporters[signal] = chosen == "otlp"
    base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or table.get("endpoint") or DEFAULT_ENDPOINT
    headers = parse_headers(env.get("OTEL_EXPORTER_OTLP_HEADERS", ""))
    timeout = table.get("export_timeout") or 5.0
    raw_timeout = env.get("OTEL_EXPORTER_OTLP_TIMEOUT", "").strip()
    if raw_timeout:
        try:
            timeout = float(raw_timeout) / 1000  # the specification's unit is milliseconds
        except ValueError:
            raise ConfigError(
                f"OTEL_EXPORTER_OTLP_TIMEOUT={raw_timeout[:20]!r} is not a number of milliseconds"
            ) from None
    capture = _flag(env.get(CAPTURE_ENV))
    return OtelSettings(
        enabled=not disabled and (exporters["traces"] or exporters["metrics"]),
        traces=exporters["traces"],
        metrics=exporters["metrics"] and bool(table.get("metrics", True)),
        traces_endpoint=_endpoint(env, "traces", base),
        metrics_endpoint=_endpoint(env, "metrics", base),
        headers=headers,
        service_name=env.get("OTEL_SERVICE_NAME", "").strip() or table.get("service_name") or "crab",
        agent_name=table.get("agent_name") or "crab",
        capture_content=bool(table.get("capture_content")) if capture is None else capture,
        max_content_chars=int(table.get("max_content_chars") or 16_384),
        export_timeout=max(timeout, 0.001),
        shutdown_timeout=float(table.get("shutdown_timeout", 3.0)),
    )
