"""Retry policy for model calls: which HTTP statuses retry, exponential backoff with jitter,
``Retry-After`` parsing (seconds or HTTP-date), and the cap above which a demanded wait fails at once.

Pure: no IO and no sleeping; the provider plugins sleep for the delays this module decides.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from crab.events import ErrorKind


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value: delta-seconds or an HTTP-date.

    ``None`` when absent or unreadable; a date in the past gives ``0.0``.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return seconds if seconds >= 0 and seconds == seconds else None
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def retry_after_from_headers(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """The server's demanded wait: ``retry-after-ms`` (OpenAI, more precise) or ``retry-after``.

    ``headers`` must look names up case-insensitively (httpx's ``Headers`` does).
    """
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            value = float(millis) / 1000.0
        except ValueError:
            value = -1.0
        if value >= 0:
            return value
    return parse_retry_after(headers.get("retry-after"), now)


def is_retryable_status(status: int) -> bool:
    """Timeouts, conflicts, rate limits, overload and server errors retry; other 4xx do not."""
    return status in (408, 409, 425, 429) or (status >= 500 and status not in (501, 505))


def status_kind(status: int) -> ErrorKind:
    """The error kind an HTTP status means before the body says more."""
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "model_not_found"
    if status == 413:
        return "context_overflow"
    if status == 429:
        return "rate_limit"
    if status in (503, 529):
        return "overloaded"
    if status == 408:
        return "network"
    if status >= 500:
        return "server"
    return "invalid_request"


@dataclass(frozen=True, slots=True)
class RetryDecision:
    """Whether to try again and after how long; ``reason`` explains a refusal in one line."""

    retry: bool
    delay: float = 0.0
    reason: str = ""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter: ``base_delay * 2**(n-1)`` seconds before retry ``n``.

    ``max_retries`` retries follow the first attempt. A server's ``Retry-After`` replaces the
    computed delay when it is at most ``retry_cap`` seconds; a longer demand is refused at once,
    because blocking a turn for minutes is worse than saying so.
    """

    max_retries: int = 3
    base_delay: float = 2.0
    max_delay: float = 30.0
    retry_cap: float = 60.0
    jitter: float = 0.2

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        if self.base_delay < 0 or self.max_delay < 0 or self.retry_cap < 0:
            raise ValueError("delays must not be negative")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    @property
    def max_attempts(self) -> int:
        return self.max_retries + 1

    def backoff(self, retry: int, rand: Callable[[], float] = random.random) -> float:
        """Delay before retry number ``retry`` (1-based), spread by ±``jitter`` so clients desync."""
        delay = min(self.max_delay, self.base_delay * 2.0 ** max(0, retry - 1))
        return max(0.0, delay * (1.0 + self.jitter * (2.0 * rand() - 1.0)))

    def decide(
        self, attempt: int, retry_after: float | None = None, rand: Callable[[], float] = random.random
    ) -> RetryDecision:
        """After failed attempt number ``attempt`` (1-based) of a retryable error: wait, or give up."""
        if attempt >= self.max_attempts:
            return RetryDecision(False, reason=f"gave up after {attempt} attempts")
        if retry_after is not None:
            if retry_after > self.retry_cap:
                return RetryDecision(
                    False,
                    reason=f"the server asked to wait {retry_after:g} s, over the {self.retry_cap:g} s retry cap",
                )
            return RetryDecision(True, delay=retry_after)
        return RetryDecision(True, delay=self.backoff(attempt, rand))
