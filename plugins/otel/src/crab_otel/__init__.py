"""crab-otel: every turn, model call and tool call as OpenTelemetry GenAI spans (``invoke_agent``,
``chat {model}``, ``execute_tool {name}``) and the GenAI client metrics, exported over OTLP/HTTP.

Hook implementations only; the spans are built in ``crab_otel.spans`` from the events the loop
emits, the SDK pipeline in ``crab_otel.pipeline``, settings in ``crab_otel.settings``. The entry
point is the class: crab makes one object per plugin host, which holds that run's providers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import crab

if TYPE_CHECKING:
    from crab import AgentHandle, Config, ConfigTable, ModelRequest, Tool, ToolContext
    from crab.events import Event
    from crab.messages import ToolCall

    from crab_otel.pipeline import Pipeline
    from crab_otel.spans import SpanBook

CRAB_API = ">=0.1,<0.2"


class OtelPlugin:
    """The ``otel`` plugin: one per host. ``span_exporter`` and ``metric_reader`` replace the OTLP
    exporters (a program that ships telemetry its own way; the tests' in-memory ones)."""

    CRAB_API = CRAB_API

    def __init__(self, *, span_exporter: Any = None, metric_reader: Any = None) -> None:
        self.span_exporter = span_exporter
        self.metric_reader = metric_reader
        self.book: SpanBook | None = None
        self.pipeline: Pipeline | None = None
        self._broken = False
        self.agent: AgentHandle | None = None

    @crab.hookimpl
    def crab_config_table(self) -> ConfigTable:
        """``[plugins.otel]``: see ``crab_otel.settings.TABLE``."""
        from crab_otel.settings import TABLE

        return TABLE

    @crab.hookimpl
    def crab_startup(self, agent: AgentHandle) -> None:
        """Build the providers and the span book (bad ``OTEL_*`` values were refused with the
        config, in one line; anything else that stops telemetry starting is one warning)."""
        from crab_otel.runtime import start

        self.agent = agent
        try:
            started = start(agent, self.span_exporter, self.metric_reader)
        except Exception as exc:
            # Raising would fail the plugin, and a failed interceptor refuses every model call:
            # telemetry that cannot start is one warning, and the run goes on without it.
            agent.notice(f"otel: tracing is off for this run: {type(exc).__name__}: {exc}", "warning")
            return
        if started is not None:
            self.pipeline, self.book = started

    @crab.hookimpl
    def crab_event(self, event: Event, session_id: str) -> None:
        if self.book is not None:
            self.book.event(event, session_id)

    @crab.hookimpl
    def crab_before_model_call(self, request: ModelRequest, session_id: str) -> None:
        # An interceptor that raises refuses the call: tracing must never do that, so it is guarded.
        if self.book is not None and not self._broken:
            try:
                self.book.before_model_call(request, session_id)
            except Exception as exc:
                self._give_up(exc)

    @crab.hookimpl(tryfirst=True)
    def crab_before_tool_call(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> None:
        # First, so the span holds the permission gate's wait (the gate runs last).
        if self.book is not None and not self._broken:
            try:
                self.book.before_tool_call(call, tool, ctx)
            except Exception as exc:
                self._give_up(exc)

    @crab.hookimpl
    def crab_shutdown(self, agent: AgentHandle) -> None:
        if self.book is not None:
            self.book.close()
        if self.pipeline is not None:
            self.pipeline.close()
        self.book = self.pipeline = self.agent = None

    @crab.hookimpl
    def crab_doctor(self, config: Config) -> list[tuple[str, str]]:
        """Where telemetry goes, and whether content is recorded; never a header's value."""
        from crab_otel.runtime import doctor_lines

        return doctor_lines(config)

    def _give_up(self, exc: Exception) -> None:
        """A bug in tracing ends tracing for this run (one line), never the call it watched."""
        self._broken = True
        self.book = None
        if self.agent is not None:
            self.agent.notice(f"otel: tracing stopped after an error: {type(exc).__name__}: {exc}", "warning")
