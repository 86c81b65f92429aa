"""What a session's calls tell a provider and the user about prompt caching: every request names
its session (``ModelRequest.session_id``, the key a provider caches by), and ``/cost`` shows
cache reads and writes and what caching saved at the model's prices."""

from __future__ import annotations

import crab
from crab.testing import AgentHarness, ScriptedProvider

USAGE = {"input_tokens": 200, "output_tokens": 100, "cache_read_tokens": 1_000_000, "cache_write_tokens": 100_000}


class PricedProvider(ScriptedProvider):
    """The scripted model with Claude Sonnet's prices: reads 0.1x input, writes 1.25x."""

    def models(self) -> list[crab.ModelInfo]:
        return [
            crab.ModelInfo(
                self.model,
                self.name,
                context_window=1_000_000,
                input_price=3.0,
                output_price=15.0,
                cache_read_price=0.3,
                cache_write_price=3.75,
            )
        ]


def test_every_request_names_its_session(crab_home) -> None:
    provider = ScriptedProvider([[{"tool": {"name": "ls", "arguments": {}}}], [{"text": "done"}]])
    h = AgentHarness(provider=provider)
    try:
        h.run("look around")
        assert len(provider.requests) == 2
        assert {r.session_id for r in provider.requests} == {h.session.id}
        h.run_async(h.handle.complete(h.session, [crab.messages.UserMessage("summarise")]))
        assert provider.requests[-1].session_id == h.session.id
    finally:
        h.close()


def test_cost_shows_cache_tokens_and_what_caching_saved(crab_home) -> None:
    h = AgentHarness(provider=PricedProvider([[{"text": "hi", "usage": USAGE}]]))
    try:
        h.run("hello")
        text = h.run("/cost").text
        assert "1 call, 200 in, 100 out, 1,000,000 cache read, 100,000 cache write" in text
        # 1.1M cached tokens at $3/M would have cost $3.30; read and written they cost $0.675.
        assert "caching saved $2.6250: the cached tokens would have cost $3.3000 as input, and cost $0.6750" in text
    finally:
        h.close()


def test_cost_without_cache_use_has_no_savings_line(crab_home) -> None:
    h = AgentHarness(provider=PricedProvider([[{"text": "hi", "usage": {"input_tokens": 10, "output_tokens": 5}}]]))
    try:
        h.run("hello")
        text = h.run("/cost").text
        assert "1 call, 10 in, 5 out" in text and "caching" not in text
    finally:
        h.close()
