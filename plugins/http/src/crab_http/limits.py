"""Per-token rate limiting: a token bucket of ``rate_limit`` requests a minute, as big a burst."""

from __future__ import annotations

import time
from collections.abc import Callable


class RateLimiter:
    """``allow(name)`` spends one request of ``name``'s bucket; ``retry_after`` says when one is back."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self.clock = clock
        self.buckets: dict[str, tuple[float, float]] = {}

    def allow(self, name: str) -> bool:
        now = self.clock()
        level, since = self.buckets.get(name, (self.capacity, now))
        level = min(self.capacity, level + (now - since) * self.rate)
        if level < 1.0:
            self.buckets[name] = (level, now)
            return False
        self.buckets[name] = (level - 1.0, now)
        return True

    def retry_after(self, name: str) -> int:
        level, _ = self.buckets.get(name, (self.capacity, 0.0))
        return max(1, int((1.0 - level) / self.rate + 0.999))
