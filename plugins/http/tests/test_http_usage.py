"""A turn's usage in OpenAI's shape, cache reads and writes included, as the official ``openai``
SDK reads it."""

from __future__ import annotations

import openai.types
from crab_http.openai_compat import usage_of


def test_usage_carries_cache_reads_and_writes_as_the_sdk_reads_them():
    crab_usage = {"input_tokens": 25, "output_tokens": 15, "cache_read_tokens": 2000, "cache_write_tokens": 1000}
    usage = openai.types.CompletionUsage.model_validate(usage_of(crab_usage))
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (3025, 15, 3040)
    assert usage.prompt_tokens_details is not None and usage.prompt_tokens_details.cached_tokens == 2000
    assert usage_of(crab_usage)["prompt_tokens_details"]["cache_write_tokens"] == 1000


def test_usage_without_cache_counts_zero():
    usage = openai.types.CompletionUsage.model_validate(usage_of({"input_tokens": 5, "output_tokens": 2}))
    assert (usage.prompt_tokens, usage.total_tokens) == (5, 7)
    assert usage.prompt_tokens_details is not None and usage.prompt_tokens_details.cached_tokens == 0
    assert usage_of(None)["prompt_tokens"] == 0
