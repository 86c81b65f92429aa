"""Cost of a model call: token usage times the per-million-token prices in a ``ModelInfo`` (from
config or a provider's table, no network). The one place crab prices usage; arithmetic on two
contract values, so ``_values``' (the loop calls ``with_cost`` once per call in ``model_call``;
``cache_savings`` says what prompt caching saved, for ``/cost``)."""

from __future__ import annotations

from dataclasses import replace

from crab._contracts.messages import Usage
from crab._contracts.providers import ModelInfo

PER_TOKENS = 1_000_000


def usage_cost(usage: Usage, model: ModelInfo) -> float | None:
    """US dollars for ``usage`` on ``model``; ``None`` when the model has no prices configured.

    Cache reads cost ``cache_read_price`` and cache writes ``cache_write_price`` (Anthropic
    charges extra for writing its prompt cache); each falls back to ``input_price`` when unset,
    so a missing cache price never makes a call look free. Reasoning tokens are part of output.
    """
    if model.input_price is None and model.output_price is None:
        return None
    input_price: float = model.input_price or 0.0
    output_price: float = model.output_price or 0.0
    read_price: float = input_price if model.cache_read_price is None else model.cache_read_price
    write_price: float = input_price if model.cache_write_price is None else model.cache_write_price
    total: float = (
        usage.input_tokens * input_price
        + usage.output_tokens * output_price
        + usage.cache_read_tokens * read_price
        + usage.cache_write_tokens * write_price
    )
    return total / PER_TOKENS


def with_cost(usage: Usage, model: ModelInfo | None) -> Usage:
    """``usage`` with ``cost`` filled in when ``model`` has prices; unchanged otherwise.

    A cost already on ``usage`` (one a server reported itself) is kept: it is what was billed.
    ``input_tokens`` is uncached input; cache reads and writes are priced apart (how both
    OpenAI-style and Anthropic-style usage map onto ``Usage``).
    """
    if model is None or usage.cost is not None:
        return usage
    cost = usage_cost(usage, model)
    return usage if cost is None else replace(usage, cost=cost)


def cache_savings(usage: Usage, model: ModelInfo) -> tuple[float, float] | None:
    """``(uncached, cached)``: US dollars the cache reads and writes of ``usage`` would have cost
    as plain input, and what they cost at the cache prices (what caching saved is the difference;
    writes cost more than input at Anthropic, so a session of writes alone saves less than 0).
    None when the model has no input price or ``usage`` touched no cache."""
    if model.input_price is None or not (usage.cache_read_tokens or usage.cache_write_tokens):
        return None
    read_price = model.input_price if model.cache_read_price is None else model.cache_read_price
    write_price = model.input_price if model.cache_write_price is None else model.cache_write_price
    uncached = (usage.cache_read_tokens + usage.cache_write_tokens) * model.input_price
    cached = usage.cache_read_tokens * read_price + usage.cache_write_tokens * write_price
    return uncached / PER_TOKENS, cached / PER_TOKENS
