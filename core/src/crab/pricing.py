"""Cost of a model call: token usage times the per-million-token prices in a ``ModelInfo``.

No network: prices come from config. ``input_tokens`` is uncached input; cache reads and writes
are counted apart (that is how both OpenAI-style and Anthropic-style usage map onto ``Usage``).
"""

from __future__ import annotations

from dataclasses import replace

from crab.messages import Usage
from crab.providers import ModelInfo

PER_TOKENS = 1_000_000


def usage_cost(usage: Usage, model: ModelInfo, cache_write_price: float | None = None) -> float | None:
    """US dollars for ``usage`` on ``model``; ``None`` when the model has no prices configured.

    Cache reads cost ``cache_read_price`` and cache writes ``cache_write_price``; each falls back
    to ``input_price`` when unset, so a missing cache price never makes a call look free.
    """
    if model.input_price is None and model.output_price is None:
        return None
    input_price: float = model.input_price or 0.0
    output_price: float = model.output_price or 0.0
    read_price: float = input_price if model.cache_read_price is None else model.cache_read_price
    if cache_write_price is None:
        cache_write_price = model.cache_write_price
    write_price = input_price if cache_write_price is None else cache_write_price
    total: float = (
        usage.input_tokens * input_price
        + usage.output_tokens * output_price
        + usage.cache_read_tokens * read_price
        + usage.cache_write_tokens * write_price
    )
    return total / PER_TOKENS


def with_cost(usage: Usage, model: ModelInfo | None, cache_write_price: float | None = None) -> Usage:
    """``usage`` with ``cost`` filled in when ``model`` has prices; unchanged otherwise."""
    if model is None:
        return usage
    cost = usage_cost(usage, model, cache_write_price)
    return usage if cost is None else replace(usage, cost=cost)
