"""Pricing: usage times per-million prices, cache prices falling back to the input price."""

from __future__ import annotations

import pytest
from crab._contracts.messages import Usage
from crab._contracts.providers import ModelInfo
from crab._values.pricing import cache_savings, usage_cost, with_cost


def test_cost_of_input_and_output() -> None:
    model = ModelInfo("m", "p", input_price=2.0, output_price=8.0)
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000)
    assert usage_cost(usage, model) == pytest.approx(2.0 + 4.0)


def test_cache_prices_and_their_fallbacks() -> None:
    usage = Usage(input_tokens=0, output_tokens=0, cache_read_tokens=1_000_000, cache_write_tokens=1_000_000)
    priced = ModelInfo("m", "p", input_price=3.0, output_price=15.0, cache_read_price=0.3, cache_write_price=3.75)
    assert usage_cost(usage, priced) == pytest.approx(0.3 + 3.75)
    unpriced_cache = ModelInfo("m", "p", input_price=3.0, output_price=15.0)
    assert usage_cost(usage, unpriced_cache) == pytest.approx(6.0)


def test_no_prices_means_unknown_cost() -> None:
    usage = Usage(input_tokens=10, output_tokens=10)
    assert usage_cost(usage, ModelInfo("m", "p")) is None
    assert with_cost(usage, ModelInfo("m", "p")) is usage
    assert with_cost(usage, None) is usage


def test_with_cost_fills_in_cost() -> None:
    usage = Usage(input_tokens=100, output_tokens=50)
    priced = with_cost(usage, ModelInfo("m", "p", input_price=1.0, output_price=2.0))
    assert priced.cost == pytest.approx((100 * 1.0 + 50 * 2.0) / 1_000_000)
    assert priced.input_tokens == 100


def test_anthropic_style_usage_prices_cache_writes_from_the_model() -> None:
    """Anthropic's cache writes cost more than input: the price comes from the model table alone."""
    model = ModelInfo(
        "claude", "anthropic", input_price=3.0, output_price=15.0, cache_read_price=0.3, cache_write_price=3.75
    )
    usage = Usage(input_tokens=1_000, output_tokens=2_000, cache_read_tokens=10_000, cache_write_tokens=4_000)
    expected = (1_000 * 3.0 + 2_000 * 15.0 + 10_000 * 0.3 + 4_000 * 3.75) / 1_000_000
    assert with_cost(usage, model).cost == pytest.approx(expected)


def test_a_cost_the_server_reported_is_kept() -> None:
    usage = Usage(input_tokens=100, output_tokens=50, cost=0.5)
    assert with_cost(usage, ModelInfo("m", "p", input_price=1.0, output_price=2.0)) is usage


def test_cache_savings_compares_cached_tokens_with_plain_input() -> None:
    model = ModelInfo("claude", "anthropic", input_price=3.0, cache_read_price=0.3, cache_write_price=3.75)
    usage = Usage(input_tokens=500, cache_read_tokens=1_000_000, cache_write_tokens=100_000)
    uncached, cached = cache_savings(usage, model) or (0.0, 0.0)
    assert uncached == pytest.approx(1_100_000 * 3.0 / 1e6)
    assert cached == pytest.approx((1_000_000 * 0.3 + 100_000 * 3.75) / 1e6)
    # Writes alone cost more than plain input at Anthropic: the saving is negative.
    writes = cache_savings(Usage(cache_write_tokens=1_000_000), model) or (0.0, 0.0)
    assert writes[0] - writes[1] == pytest.approx(-0.75)
    assert cache_savings(Usage(input_tokens=10), model) is None  # no cache touched
    assert cache_savings(usage, ModelInfo("m", "p")) is None  # no prices
