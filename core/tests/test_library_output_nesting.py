"""A typed run's answer is the model's to write, so a hostile one (JSON nested
deeper than Python's recursion limit) is an answer that does not fit, sent back with the reason and
at last a ``crab.OutputError``, never a ``RecursionError`` out of ``run``; a streaming typed run's
partial values skip it the same way (docs/library.md#typed-results)."""

from __future__ import annotations

from pathlib import Path

import crab
import pytest
from crab.testing import ScriptedProvider

QUIET = {"user_config": False, "project_config": False, "environment": False, "plugins": []}
DEEP = '{"result": ' + "[" * 100_000 + "]" * 100_000 + "}"


def test_an_answer_nested_too_deep_goes_back_to_the_model_then_is_an_output_error(crab_home: Path):
    provider = ScriptedProvider([[{"text": DEEP}], [{"text": '{"result": [1, 2]}'}]])
    with crab.Agent(provider=provider, output_type=list[int], output_retries=1, **QUIET) as agent:
        result = agent.run_sync("numbers?")
    assert result.output == [1, 2]
    retry = provider.requests[1].messages[-1]
    assert isinstance(retry, crab.messages.UserMessage) and "nested" in retry.content
    provider = ScriptedProvider([[{"text": DEEP}], [{"text": DEEP}]])
    agent = crab.Agent(provider=provider, output_type=list[int], output_retries=1, **QUIET)
    with agent, pytest.raises(crab.OutputError) as raised:
        agent.run_sync("numbers?")
    assert "nested" in raised.value.reason and raised.value.result is not None


def test_a_streaming_typed_run_skips_a_too_deep_partial_answer(crab_home: Path):
    provider = ScriptedProvider([[{"text": DEEP}], [{"text": '{"result": [3]}'}]])
    with crab.Agent(provider=provider, output_type=list[int], output_retries=1, **QUIET) as agent:
        run = agent.run_stream_sync("numbers?")
        partials = list(run.stream_output_sync())
        result = run.result_sync()
    assert result.output == [3]
    assert partials[-1] == [3]
