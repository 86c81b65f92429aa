"""The OpenTelemetry SDK side: a tracer and a meter provider of crab's own, exporting OTLP/HTTP
through bounded background queues; a failing collector is one warning and never a slower turn."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    MetricExporter,
    MetricExportResult,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter, SpanExportResult

from crab_otel.settings import OtelSettings

SCOPE = "crab-otel"
Warn = Callable[[str], None]


class _OnceWarning:
    """Says once per run that the collector is not taking what crab sends (never its headers)."""

    def __init__(self, where: str, warn: Warn) -> None:
        self.where = where
        self.warn = warn
        self.said = False
        self.lock = threading.Lock()

    def failed(self) -> None:
        with self.lock:
            if self.said:
                return
            self.said = True
        self.warn(
            f"otel: the collector at {self.where} did not take the telemetry; crab goes on without it "
            "(check OTEL_EXPORTER_OTLP_ENDPOINT or [plugins.otel] endpoint)"
        )


class GuardedSpanExporter(SpanExporter):
    """Another exporter whose failures (an error result or an exception) become one warning."""

    def __init__(self, inner: SpanExporter, once: _OnceWarning) -> None:
        self.inner = inner
        self.once = once

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.once.failed()
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)


class GuardedMetricExporter(MetricExporter):
    """A metric exporter whose failures become the same one warning."""

    def __init__(self, inner: MetricExporter, once: _OnceWarning) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self.inner = inner
        self.once = once

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        try:
            result = self.inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception:
            result = MetricExportResult.FAILURE
        if result is not MetricExportResult.SUCCESS:
            self.once.failed()
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)


def quiet_sdk_logs() -> None:
    """The SDK logs each failed export (and its retries) at WARNING/ERROR, which Python's last-resort
    handler prints to stderr: crab says it once itself, so those records go nowhere."""
    for name in ("opentelemetry.exporter", "opentelemetry.sdk", "opentelemetry.sdk._shared_internal"):
        logger = logging.getLogger(name)
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


@dataclass
class Pipeline:
    """The providers crab's spans and metrics go through, and how they are closed."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider | None
    shutdown_timeout: float
    once: _OnceWarning | None = None

    def close(self) -> None:
        """Flush and stop both, waiting at most ``shutdown_timeout`` seconds in all (none when the
        collector already failed this run): an export to an unreachable collector goes on in a
        daemon thread that the process's exit abandons."""

        def stop() -> None:
            try:
                self.tracer_provider.shutdown()
            finally:
                if self.meter_provider is not None:
                    self.meter_provider.shutdown(timeout_millis=self.shutdown_timeout * 1000)

        worker = threading.Thread(target=stop, name="crab-otel-shutdown", daemon=True)
        worker.start()
        worker.join(0.0 if self.once is not None and self.once.said else self.shutdown_timeout)
        if worker.is_alive() and self.once is not None:
            # the last export did not end in time (a collector that never answers, a slow machine):
            # what it held is lost, which the user hears once, as for a refused export
            self.once.failed()


def build(
    settings: OtelSettings,
    warn: Warn,
    *,
    span_exporter: SpanExporter | None = None,
    metric_reader: MetricReader | None = None,
) -> Pipeline:
    """The providers for ``settings``. ``span_exporter`` and ``metric_reader`` replace the OTLP
    ones (a program's own, or the tests' in-memory ones; spans then go out as they end)."""
    resource = Resource.create({"service.name": settings.service_name})
    # Closed by Pipeline.close within shutdown_timeout, never again at exit (where it would wait unbounded).
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    headers = dict(settings.headers) or None
    once = _OnceWarning(settings.traces_endpoint.rsplit("/v1/", 1)[0], warn)  # one warning for both signals
    if span_exporter is not None:
        tracer_provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    elif settings.traces:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        quiet_sdk_logs()
        exporter = OTLPSpanExporter(endpoint=settings.traces_endpoint, headers=headers, timeout=settings.export_timeout)
        # BatchSpanProcessor: a bounded queue (OTEL_BSP_MAX_QUEUE_SIZE, 2048) drained by its own
        # thread; a full queue drops spans rather than making the turn wait.
        tracer_provider.add_span_processor(BatchSpanProcessor(GuardedSpanExporter(exporter, once)))
    meter_provider: MeterProvider | None = None
    if metric_reader is not None:
        meter_provider = MeterProvider(resource=resource, metric_readers=[metric_reader], shutdown_on_exit=False)
    elif settings.metrics:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

        quiet_sdk_logs()
        metric_exporter = OTLPMetricExporter(
            endpoint=settings.metrics_endpoint, headers=headers, timeout=settings.export_timeout
        )
        reader = PeriodicExportingMetricReader(
            GuardedMetricExporter(metric_exporter, once), export_timeout_millis=settings.export_timeout * 1000
        )
        meter_provider = MeterProvider(resource=resource, metric_readers=[reader], shutdown_on_exit=False)
    return Pipeline(tracer_provider, meter_provider, settings.shutdown_timeout, once)
