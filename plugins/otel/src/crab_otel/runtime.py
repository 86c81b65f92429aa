"""Starting crab-otel for one agent (settings, pipeline, span book, warnings back to the user) and
what ``crab doctor`` says of it."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from crab import AgentHandle, Config
from crab.secrets import Redactor, known_secrets

from crab_otel.pipeline import SCOPE, Pipeline, build
from crab_otel.settings import PLUGIN, load_settings
from crab_otel.spans import Metrics, Server, SpanBook, server_of


def _warner(agent: AgentHandle) -> Any:
    """A warning from an exporter thread, delivered in the agent's loop (stderr once it is gone)."""
    loop = asyncio.get_running_loop()

    def warn(message: str) -> None:
        try:
            loop.call_soon_threadsafe(agent.notice, message, "warning")
        except RuntimeError:  # the loop has closed: the run is ending
            print(f"crab: {message}", file=sys.stderr)

    return warn


def _servers(config: Config) -> Any:
    """``server.address`` of a provider: its plugin's ``base_url`` setting, when it has one
    (crab-openai's, crab-anthropic's and any provider built on crab-provider-kit's HTTP options)."""

    def server(provider: str) -> Server | None:
        try:
            return server_of(config.plugin_settings(provider).get("base_url"))
        except Exception:
            return None

    return server


def start(agent: AgentHandle, span_exporter: Any = None, metric_reader: Any = None) -> tuple[Pipeline, SpanBook] | None:
    """The pipeline and span book of ``agent``'s run; None when the ``OTEL_*`` variables turn
    everything off (``OTEL_SDK_DISABLED=true``, or both exporters ``none``)."""
    settings = load_settings(agent.config.plugin_settings(PLUGIN))
    if not settings.enabled and span_exporter is None and metric_reader is None:
        return None
    pipeline = build(settings, _warner(agent), span_exporter=span_exporter, metric_reader=metric_reader)
    from crab import __version__

    from crab_otel.content import ContentRecorder

    redactor = Redactor(known_secrets(agent.config) + settings.header_values)
    content = ContentRecorder(redactor, settings.max_content_chars) if settings.capture_content else None
    metrics = None
    if pipeline.meter_provider is not None:
        metrics = Metrics.on(pipeline.meter_provider.get_meter(SCOPE, __version__))
    book = SpanBook(
        pipeline.tracer_provider.get_tracer(SCOPE, __version__),
        agent_name=settings.agent_name,
        provider=agent.provider_name,
        model=agent.model,
        servers=_servers(agent.config),
        metrics=metrics,
        content=content,
        redact=redactor.text,
    )
    return pipeline, book


def doctor_lines(config: Config) -> list[tuple[str, str]]:
    """Where spans and metrics go and whether content is recorded; headers by count only."""
    try:
        settings = load_settings(config.plugin_settings(PLUGIN))
    except Exception as exc:
        return [("fail", f"otel: {exc}")]
    if not settings.enabled:
        return [("note", "otel: exporting nothing (OTEL_SDK_DISABLED or both exporters none)")]
    lines = [("ok", f"otel: spans to {settings.traces_endpoint}" if settings.traces else "otel: no spans")]
    if settings.metrics:
        lines.append(("ok", f"otel: metrics to {settings.metrics_endpoint}"))
    if settings.headers:
        lines.append(
            ("note", f"otel: {len(settings.headers)} header(s) from OTEL_EXPORTER_OTLP_HEADERS (values not shown)")
        )
    capture = "on (redacted)" if settings.capture_content else "off"
    lines.append(("note", f"otel: content capture {capture}"))
    return lines
