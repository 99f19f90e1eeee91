"""The cell-key method for exact attributes: a consistent, bounded perturbation of counts.

Pure module: numpy only.

Answers collected without distortion (``mechanism: none``) are a register, and a
register is protected as statistical offices protect theirs (the ABS TableBuilder's
perturbation; the cell-key method of Eurostat and Destatis, as in the SDC tool
``cellKey``; Thompson, Broadfoot and Elazar 2013, "Methodology for the automatic
confidentialisation of statistical outputs from remote servers at the Australian
Bureau of Statistics"):

1. every response gets a random **record key** when it is stored: an integer drawn
   uniformly from ``[0, 2**32)`` (:func:`new_record_keys`), kept in the database and
   never published;
2. a cell (a count, a group, a distribution's cell) gets the **cell key**: the sum of its
   records' keys modulo ``2**32``, read as two 16-bit halves, each a number in ``[0, 1)``
   (:func:`cell_keys`). The database sums the keys in the same ``GROUP BY`` that counts
   the cell (``surveys/condition_counts.py``); the sum is exact integer arithmetic, so the
   same records give the same key on SQLite and PostgreSQL, in any order;
3. the published value is the true count plus the **perturbation** that the fixed,
   published table :data:`PERTURBATION` assigns to the first half of the cell key
   (:func:`perturbation`): at most 2 either way, symmetric, so its mean is 0 (no sign
   bias) and its variance is :data:`VARIANCE` (1.2). A count of 0 stays 0, a count of 1
   or 2 moves by at most ``n - 1`` (never to 0 or below);
4. a sum over a cell (a mean's numerator) moves by the second half's perturbation times
   the cell's own mean (:func:`perturbed_mean`): "in proportion", as if up to two
   average records were added or removed.

The same records always give the same cell key and so the same published value:
repeating a query, or asking it again under another condition that selects the same
people, does not average the perturbation away. Two cells that differ by one record
have unrelated keys, so a before/after pair (a withdrawal, a late submission) differs by
the change plus the difference of two independent perturbations, never by the change
alone.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

KEY_BITS = 32
KEY_MODULUS = 1 << KEY_BITS
_HALF = 1 << (KEY_BITS // 2)

MAX_PERTURBATION = 2
"""The largest change the table makes to a count, either way."""

PERTURBATION: tuple[tuple[int, float], ...] = (
    (-2, 0.1),
    (-1, 0.2),
    (0, 0.4),
    (1, 0.2),
    (2, 0.1),
)
"""The published perturbation table for counts of 3 or more: (change, probability)."""

SMALL_PERTURBATION: tuple[tuple[int, float], ...] = ((-1, 0.25), (0, 0.5), (1, 0.25))
"""The table for a count of 2 (it never reaches 0); a count of 0 or 1 is not changed."""


def table_moments(table: Sequence[tuple[int, float]]) -> tuple[float, float]:
    """The mean and variance of a perturbation table's change ((change, probability) rows)."""
    mean = sum(d * p for d, p in table)
    return mean, sum((d - mean) ** 2 * p for d, p in table)


MEAN, VARIANCE = table_moments(PERTURBATION)
"""The table's mean (0: no bias) and variance (1.2)."""


def cumulative_bounds(table: Sequence[tuple[int, float]]) -> NDArray[np.float64]:
    """The upper bound of each row's interval of keys: a key below the first bound gets
    the first row's change, a key from one bound up to the next gets the next row's."""
    # Rounded: 0.1 + 0.2 is 0.30000000000000004 in floating point, and a key of exactly
    # 0.3 belongs to the next row.
    return np.round(np.cumsum([p for _, p in table]), 12)


_BOUNDS = cumulative_bounds(PERTURBATION)
_SMALL_BOUNDS = cumulative_bounds(SMALL_PERTURBATION)


def new_record_keys(count: int) -> list[int]:
    """``count`` record keys, uniform on ``[0, 2**32)``, from the operating system's
    random source (one draw for the whole batch, so bulk ingest stays fast)."""
    if count < 0:
        raise ValueError(f"count must be non-negative, got {count}")
    raw = np.frombuffer(secrets.token_bytes(4 * count), dtype="<u4")
    keys: list[int] = raw.astype(np.int64).tolist()
    return keys


def new_record_key() -> int:
    return secrets.randbelow(KEY_MODULUS)


@dataclass(frozen=True)
class CellKey:
    """A cell's key in two independent halves, each in ``[0, 1)``: ``count`` for its
    count's perturbation and ``total`` for its sums'."""

    count: float
    total: float


def cell_keys(key_sum: int) -> CellKey:
    """The cell key of a cell whose records' keys sum to ``key_sum`` (any integer)."""
    if isinstance(key_sum, bool) or not isinstance(key_sum, (int, np.integer)):
        raise ValueError(f"a key sum is an integer, got {key_sum!r}")
    key = int(key_sum) % KEY_MODULUS
    return CellKey(count=(key >> (KEY_BITS // 2)) / _HALF, total=(key % _HALF) / _HALF)


def lookup(count: int, key: float) -> int:
    """The table's change for a cell of ``count`` records whose key is ``key`` in [0, 1)."""
    if not 0.0 <= key < 1.0:
        raise ValueError(f"a cell key lies in [0, 1), got {key}")
    if count < 0:
        raise ValueError(f"a count is non-negative, got {count}")
    if count <= 1:
        return 0
    table, bounds = (SMALL_PERTURBATION, _SMALL_BOUNDS) if count == 2 else (PERTURBATION, _BOUNDS)
    index = int(np.searchsorted(bounds, key, side="right"))
    return table[min(index, len(table) - 1)][0]


def perturbation(count: int, key_sum: int) -> int:
    """The change the cell-key method makes to a count of ``count`` records whose keys
    sum to ``key_sum``."""
    return lookup(int(count), cell_keys(key_sum).count)


def perturbed_count(count: int, key_sum: int) -> int:
    """The published count: the true count plus :func:`perturbation`."""
    return int(count) + perturbation(count, key_sum)


def perturbed_mean(mean: float, count: int, key_sum: int) -> float:
    """The published mean of a cell: its sum moved by up to two of its own average
    records (the second half of the key), over its perturbed count.

    ``(sum + d_total * mean) / (count + d_count)`` with ``sum = mean * count``.
    """
    if count <= 0:
        return float(mean)
    keys = cell_keys(key_sum)
    d_total = lookup(int(count), keys.total)
    d_count = lookup(int(count), keys.count)
    return float(mean) * (count + d_total) / (count + d_count)


def perturbed_counts(
    counts: Sequence[int] | NDArray[np.int64], key_sums: Sequence[int] | NDArray[np.int64]
) -> list[int]:
    """:func:`perturbed_count` of every cell of a table (in order)."""
    return [perturbed_count(int(c), int(k)) for c, k in zip(counts, key_sums, strict=True)]


def bounds(published: float) -> tuple[float, float]:
    """Where the true count of a published (perturbed) count lies: within 2 of it."""
    return (float(published) - MAX_PERTURBATION, float(published) + MAX_PERTURBATION)


__all__ = [
    "KEY_MODULUS",
    "MAX_PERTURBATION",
    "MEAN",
    "PERTURBATION",
    "SMALL_PERTURBATION",
    "VARIANCE",
    "CellKey",
    "bounds",
    "cell_keys",
    "cumulative_bounds",
    "lookup",
    "new_record_key",
    "new_record_keys",
    "perturbation",
    "perturbed_count",
    "perturbed_counts",
    "perturbed_mean",
    "table_moments",
]
