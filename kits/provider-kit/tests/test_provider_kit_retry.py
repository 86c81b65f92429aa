"""Retry policy: backoff growth and jitter, Retry-After in both forms, the cap, retryable statuses."""

from __future__ import annotations

from email.utils import formatdate

import pytest
from crab_provider_kit import (
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
    retry_after_from_headers,
    status_kind,
)
from crab_provider_kit._retry import RetryDecision  # the kit's own module: its tests may look inside


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=2.0, max_delay=10.0, jitter=0.0)
    assert [policy.backoff(n) for n in (1, 2, 3, 4)] == [2.0, 4.0, 8.0, 10.0]


def test_jitter_spreads_within_bounds() -> None:
    policy = RetryPolicy(base_delay=4.0, jitter=0.25)
    assert policy.backoff(1, rand=lambda: 0.0) == pytest.approx(3.0)
    assert policy.backoff(1, rand=lambda: 1.0) == pytest.approx(5.0)
    assert policy.backoff(1, rand=lambda: 0.5) == pytest.approx(4.0)


def test_decide_gives_up_after_max_retries() -> None:
    policy = RetryPolicy(max_retries=2, base_delay=1.0, jitter=0.0)
    assert policy.max_attempts == 3
    assert policy.decide(1) == RetryDecision(True, 1.0)
    assert policy.decide(2) == RetryDecision(True, 2.0)
    final = policy.decide(3)
    assert not final.retry
    assert "3 attempts" in final.reason


def test_retry_after_replaces_backoff_up_to_the_cap() -> None:
    policy = RetryPolicy(retry_cap=60.0)
    assert policy.decide(1, retry_after=42.0) == RetryDecision(True, 42.0)
    refused = policy.decide(1, retry_after=61.0)
    assert not refused.retry
    assert "61" in refused.reason
    assert "60" in refused.reason


def test_zero_retries_never_retries() -> None:
    assert not RetryPolicy(max_retries=0).decide(1).retry


def test_invalid_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="max_retries"):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError, match="jitter"):
        RetryPolicy(jitter=2.0)


def test_parse_retry_after_seconds_and_dates() -> None:
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after(None) is None
    assert parse_retry_after("") is None
    assert parse_retry_after("-4") is None
    assert parse_retry_after("soon") is None
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30.0)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


def test_retry_after_headers_prefer_milliseconds() -> None:
    assert retry_after_from_headers({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_from_headers({"retry-after-ms": "junk", "retry-after": "9"}) == 9.0
    assert retry_after_from_headers({}) is None


@pytest.mark.parametrize(
    ("status", "retryable", "kind"),
    [
        (400, False, "invalid_request"),
        (401, False, "auth"),
        (403, False, "auth"),
        (404, False, "model_not_found"),
        (408, True, "network"),
        (413, False, "context_overflow"),
        (429, True, "rate_limit"),
        (500, True, "server"),
        (501, False, "server"),
        (502, True, "server"),
        (503, True, "overloaded"),
        (529, True, "overloaded"),
    ],
)
def test_status_classification(status: int, retryable: bool, kind: str) -> None:
    assert is_retryable_status(status) is retryable
    assert status_kind(status) == kind
