"""crab-otel's exit: the last export is waited for at most ``shutdown_timeout``, and telemetry it
could not hand over in that time is one warning, never silence and never a longer wait."""

from __future__ import annotations

import threading
import time
from typing import Any

from crab_otel.pipeline import Pipeline, _OnceWarning


class StuckProvider:
    """A tracer provider whose flush never ends (a collector that accepts and never answers)."""

    def __init__(self) -> None:
        self.release = threading.Event()

    def shutdown(self) -> None:
        self.release.wait(30)


def test_an_export_still_running_at_the_deadline_is_one_warning_and_no_longer_wait() -> None:
    said: list[str] = []
    stuck = StuckProvider()
    pipeline = Pipeline(stuck, None, 0.2, _OnceWarning("http://127.0.0.1:4318", said.append))  # type: ignore[arg-type]
    started = time.monotonic()
    pipeline.close()
    waited = time.monotonic() - started
    stuck.release.set()
    assert len(said) == 1 and "did not take the telemetry" in said[0], said
    assert waited < 20  # bounded by shutdown_timeout, not by the export


def test_an_export_that_ends_in_time_says_nothing() -> None:
    said: list[str] = []

    class Done:
        def shutdown(self) -> Any:
            return None

    Pipeline(Done(), None, 5.0, _OnceWarning("http://127.0.0.1:4318", said.append)).close()  # type: ignore[arg-type]
    assert said == []
