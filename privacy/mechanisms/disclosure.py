"""Small-count disclosure control for published numbers.

002_f0fd5869fe299975.txt ("Aggregating participants' responses"): a question-level
threshold (no data for a question with fewer than 10 responses), an option-level threshold
(an option with fewer than 5 responses is shown as "less than 5"), and the number of
non-responses published as an interval computed only from what the reader already sees,
clamped at 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "NonResponseInterval",
    "SuppressedCounts",
    "group_publishable",
    "non_response_interval",
    "question_publishable",
    "suppress_counts",
]


def _threshold(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def _option_counts(counts: ArrayLike) -> NDArray[np.float64]:
    array = np.asarray(counts, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"counts must be a 1-D vector, got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError("counts must be finite")
    if np.any(array < 0):
        raise ValueError(f"counts must be non-negative, found {float(array.min())!r}")
    return array


@dataclass(frozen=True)
class SuppressedCounts:
    """Option counts after the option-level threshold.

    Attributes
    ----------
    counts : tuple of (float or None)
        The count where shown, ``None`` where suppressed.
    suppressed : tuple of bool
    threshold : int
        Counts below it are suppressed.
    """

    counts: tuple[float | None, ...]
    suppressed: tuple[bool, ...]
    threshold: int

    def labels(self) -> tuple[str, ...]:
        """What the reader sees: the number, or ``"less than {threshold}"``."""
        return tuple(
            f"less than {self.threshold}" if value is None else f"{value:g}"
            for value in self.counts
        )


def suppress_counts(counts: ArrayLike, *, option_threshold: int = 5) -> SuppressedCounts:
    """Apply the option-level threshold (002, "Option-level threshold").

    An option's count is shown iff it is at least ``option_threshold``; otherwise it is
    shown as "less than {option_threshold}". Each option is judged independently.

    Parameters
    ----------
    counts : array_like of shape (k,)
        Non-negative counts per option (real values, e.g. reconstructed counts, allowed).
    option_threshold : int, default 5
    """
    threshold = _threshold("option_threshold", option_threshold)
    array = _option_counts(counts)
    hidden = array < threshold
    shown: tuple[float | None, ...] = tuple(
        None if hide else float(value) for value, hide in zip(array, hidden, strict=True)
    )
    return SuppressedCounts(
        counts=shown, suppressed=tuple(bool(h) for h in hidden), threshold=threshold
    )


def question_publishable(n_responses: float, *, question_threshold: int = 10) -> bool:
    """Question-level threshold (002, "Question-level threshold").

    A question with fewer than ``question_threshold`` responses shows no data; with at
    least that many it is published (option counts still go through
    :func:`suppress_counts`).
    """
    threshold = _threshold("question_threshold", question_threshold)
    n = float(n_responses)
    if not np.isfinite(n) or n < 0:
        raise ValueError(f"n_responses must be a non-negative number, got {n_responses!r}")
    return n >= threshold


@dataclass(frozen=True)
class NonResponseInterval:
    """The published number of non-responses: ``low <= nonresponses <= high``."""

    low: float
    high: float

    def label(self) -> str:
        """E.g. ``"between 8 and 16"`` (002's example)."""
        if self.low == self.high:
            return f"{self.high:g}"
        return f"between {self.low:g} and {self.high:g}"


def non_response_interval(
    n_participants: float, counts: ArrayLike, *, option_threshold: int = 5
) -> NonResponseInterval:
    """Non-responses as an interval that leaks nothing (002, "Solution" and "Clamping").

    Let ``N`` be the number of participants, ``S`` the sum of the counts that are shown
    (those at least ``option_threshold``) and ``m`` the number of suppressed options. A
    suppressed count is only known to lie in ``[0, option_threshold - 1]``, so by interval
    arithmetic the non-responses lie in
    ``[N - S - (option_threshold - 1) m, N - S]``; the lower bound is clamped at 0.
    002's example (N = 100; 42, 33, 2, 4, 9) gives "between 8 and 16".

    Parameters
    ----------
    n_participants : float
        Total number of participants ``N``.
    counts : array_like of shape (k,)
        True (unsuppressed) counts per option; only what the reader can see is used.
    option_threshold : int, default 5

    Raises
    ------
    ValueError
        Negative or non-finite inputs, or more responses than participants.
    """
    threshold = _threshold("option_threshold", option_threshold)
    array = _option_counts(counts)
    total = float(n_participants)
    if not np.isfinite(total) or total < 0:
        raise ValueError(f"n_participants must be a non-negative number, got {n_participants!r}")
    if array.sum() > total:
        raise ValueError(
            f"the options have {array.sum():g} responses but there are only {total:g} participants"
        )
    shown = array >= threshold
    visible_sum = float(array[shown].sum())
    hidden = int(np.count_nonzero(~shown))
    high = total - visible_sum
    low = max(0.0, high - (threshold - 1) * hidden)
    return NonResponseInterval(low=low, high=high)


def group_publishable(interval: ArrayLike, *, threshold: int) -> bool:
    """Whether an estimated group (or cell) may be published: decided on its interval.

    002_f0fd5869fe299975.txt's thresholds (10 per question, 5 per cell) protect the
    *true* group. With distorted answers its size is only estimated, and a point
    estimate of 12 can stand for a true group of 3; so a group is published only when
    the whole 95% interval of its size lies at or above ``threshold``. A missing
    (NaN) interval is not evidence of a large group: not publishable.

    Parameters
    ----------
    interval : array_like of 2 floats
        ``(low, high)`` 95% interval of the group's size.
    threshold : int
        The threshold the true group must reach.
    """
    needed = _threshold("threshold", threshold)
    bounds = np.asarray(interval, dtype=np.float64).ravel()
    if bounds.size != 2:
        raise ValueError(f"interval must be (low, high), got {bounds.size} numbers")
    low = float(bounds[0])
    return bool(np.isfinite(low) and low >= needed)
