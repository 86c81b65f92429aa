"""What providers share about prompt caching: a token estimate for deciding whether a prefix is
long enough to cache, and the fallback for a server that refuses cache fields (``CacheFallback``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import aclosing
from typing import Any

from crab import ProviderError
from crab.events import RetryEvent, StreamEvent

CHARS_PER_TOKEN = 4
"""The rough estimate crab uses everywhere (``crab/_values/budget.py`` counts the same way)."""
IMAGE_TOKENS = 1600
"""An image's tokens at most, as Anthropic's vision guide gives them (about 1.15 megapixels);
its base64 text would count hundreds of times more."""
_IMAGE_TYPES = ("image", "image_url")

CACHE_FIELD_WORDS = re.compile(
    r"cache_control|cache control|prompt_cache_key|\bttl\b|extended-cache|anthropic-beta|prompt.caching", re.IGNORECASE
)
"""What a 400 that refuses a cache field names: the field, the ttl, or the beta header."""


def _chars(value: Any) -> int:
    if isinstance(value, Mapping):
        if value.get("type") in _IMAGE_TYPES:
            return IMAGE_TOKENS * CHARS_PER_TOKEN
        return sum(len(str(k)) + _chars(v) + 4 for k, v in value.items())
    if isinstance(value, list):
        return sum(_chars(item) + 1 for item in value)
    return len(value) if isinstance(value, str) else len(str(value))


def estimate_tokens(value: Any) -> int:
    """Tokens of a JSON-shaped request part (a block, a message, the tools), at ``CHARS_PER_TOKEN``
    characters each and ``IMAGE_TOKENS`` an image: enough to tell a prefix below a server's
    minimum cacheable length from one above it."""
    return _chars(value) // CHARS_PER_TOKEN


def rejects_cache_fields(error: ProviderError) -> bool:
    """Whether a failed call's error is a 400 naming a cache field (``cache_control``,
    ``prompt_cache_key``, the ttl or its beta header): the server will not take them."""
    return error.kind == "invalid_request" and CACHE_FIELD_WORDS.search(str(error)) is not None


class CacheFallback:
    """The sessions whose server refused the cache fields, for one provider object.

    ``stream`` sends a request with the fields while its session has not been refused; a 400
    naming them sends it again without them, once, with one ``RetryEvent`` saying so, and the
    session gets none from then on (for as long as the provider lives: the next process tries
    once more, and falls back the same way).
    """

    def __init__(self) -> None:
        self.refused: set[str] = set()

    def wanted(self, session_id: str, enabled: bool) -> bool:
        """Whether this session's request should carry the cache fields."""
        return enabled and session_id not in self.refused

    async def stream(
        self,
        session_id: str,
        enabled: bool,
        send: Callable[[bool], AsyncGenerator[StreamEvent, None]],
        *,
        turn_off: str,
    ) -> AsyncIterator[StreamEvent]:
        """The events of ``send(with_cache_fields)``; ``turn_off`` says which setting skips them."""
        cache = self.wanted(session_id, enabled)
        try:
            # aclosing: a caller that stops early (a reply complete, an abort) closes the HTTP call too.
            async with aclosing(send(cache)) as events:
                async for event in events:
                    yield event
        except ProviderError as exc:
            if not (cache and rejects_cache_fields(exc)):
                raise
            self.refused.add(session_id)
            yield RetryEvent(
                attempt=2,
                max_attempts=2,
                delay=0.0,
                reason=f"{exc}; sending it again without prompt-cache fields, and none for the rest of this "
                f"session ({turn_off} to skip them)",
            )
            async with aclosing(send(False)) as events:
                async for event in events:
                    yield event
