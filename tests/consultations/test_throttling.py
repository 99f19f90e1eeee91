"""The submission rate limit counts locally and shares its count in batches."""

from __future__ import annotations

from django.core.cache import caches

from consultations.throttling import _count


def test_large_limits_share_counts_in_batches() -> None:
    key = "throttle:submissions:batchtest:1"
    seen = [_count(key, 61, 1000) for _ in range(25)]
    assert seen == list(range(1, 26))  # this process counts every request
    shared = caches["default"].get(key)
    # Batches of limit // 100 = 10: at most one batch is not yet in the shared counter.
    assert shared == 21


def test_small_limits_are_exact() -> None:
    key = "throttle:submissions:exacttest:1"
    for expected in range(1, 6):
        assert _count(key, 61, 5) == expected
        assert caches["default"].get(key) == expected
