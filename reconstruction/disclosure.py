"""The threshold point: where every published group, cell and pool is judged.

002_f0fd5869fe299975.txt sets the thresholds (10 responses per question, 5 per cell).
They protect the *true* group; with distorted answers its size is only estimated, and a
point estimate of 12 can stand for a true group of 3 (issue 10, finding 4). So a group
or a cell is published only when its **size's 95% interval lies at or above the
threshold** (:func:`publishable`, the one rule; it is
:func:`privacy.mechanisms.group_publishable`). Every kind of analysis (count, mean,
distribution, sample and its strata, the panel), the reports and the query audit
(:mod:`reconstruction.auditing`) call this module; nothing else compares a size with a
threshold.

The size's interval is

- *exact* (degenerate, ``[n, n]``) when every attribute of the condition was collected
  without distortion (``mechanism: none``): the group is then counted, not estimated,
  and a participant bootstrap would only add a spread the data does not have (it refused
  an exact group of 7 against the threshold of 5);
- otherwise the engine's own joint count of the condition with its 95% interval
  (:func:`reconstruction.algorithms.queries.count_from_table`, bootstrap refits over
  participants).

A suppressed cell is labelled by what is known: its interval reaches below the
threshold. A negative estimate is never relabelled "below 5" (a statement about the
truth that nobody knows, issue 10, finding 5).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from privacy.mechanisms import cellkey, group_publishable
from privacy.mechanisms.messages import Message
from reconstruction import analysis
from reconstruction.algorithms import queries
from reconstruction.algorithms.queries import Condition
from reconstruction.analysis import AnalysisRequest
from reconstruction.jobs import JobRefused

EXACT_MECHANISM = "none"


@dataclass(frozen=True)
class GroupSize:
    """A group's size: its estimate and 95% interval (degenerate when counted exactly)."""

    estimate: float
    low: float
    high: float
    exact: bool
    key_sum: int | None = None
    """The group's records' keys summed (an exact group on a condition): its size is
    published perturbed by the cell-key method (:mod:`privacy.mechanisms.cellkey`)."""

    @property
    def ci95(self) -> tuple[float, float]:
        return (self.low, self.high)

    @property
    def perturbed(self) -> bool:
        return self.key_sum is not None

    @property
    def published(self) -> float:
        """The size as published: perturbed when counted on exact attributes."""
        if self.key_sum is None:
            return self.estimate
        return float(cellkey.perturbed_count(round(self.estimate), self.key_sum))

    @property
    def published_ci95(self) -> tuple[float, float]:
        """What the published size tells of the truth: within the perturbation's bound."""
        if self.key_sum is None:
            return self.ci95
        return cellkey.bounds(self.published)

    @staticmethod
    def counted(n: float, key_sum: int | None = None) -> GroupSize:
        return GroupSize(float(n), float(n), float(n), True, key_sum)


def publishable(interval: Sequence[float] | Any, threshold: int) -> bool:
    """The threshold point: the size's 95% interval lies at or above ``threshold``.

    A missing (NaN) interval is not evidence of a large group: not publishable.
    """
    return group_publishable(interval, threshold=int(threshold))


def is_exact(request: AnalysisRequest, keys: Sequence[str]) -> bool:
    """Every named attribute was collected without distortion (``mechanism: none``)."""
    return all(request.questions[key].mechanism == EXACT_MECHANISM for key in keys)


@dataclass(frozen=True)
class GroupCells:
    """What a group's size is fitted from: its exact count (undistorted attributes, or no
    condition), else its condition's plan and cell table (:func:`read_group`)."""

    counted: int | None = None
    plan: queries.CellPlan | None = None
    table: queries.CellTable | None = None
    key_sum: int | None = None


def read_group(
    request: AnalysisRequest,
    where: Sequence[Condition] | None = None,
    *,
    counted: Callable[[list[Condition]], tuple[queries.CellPlan, queries.CellTable]] | None = None,
) -> GroupCells:
    """The database's part of :func:`group_size`: the exact count, or the cells."""
    conditions = list(request.where if where is None else where)
    if not conditions:
        return GroupCells(counted=request.participants)
    keys = list(dict.fromkeys(c.attribute for c in conditions))
    sub = replace(request, where=conditions)
    if is_exact(request, keys):
        moments = analysis.naive_moments(sub, keys=True)
        return GroupCells(counted=moments.count, key_sum=moments.key_sum)
    if counted is not None:
        plan, table = counted(conditions)
    else:
        n = request.participants or analysis.participant_count(request)
        plan = analysis.plan(sub, n)
        table = analysis.cells(sub, plan)
    return GroupCells(plan=plan, table=table)


def fit_group(cells: GroupCells) -> GroupSize:
    """The engine's part of :func:`group_size` (no database)."""
    if cells.counted is not None:
        return GroupSize.counted(cells.counted, cells.key_sum)
    assert cells.plan is not None and cells.table is not None
    result = queries.count_from_table(cells.plan, cells.table)
    low, high = result.ci95
    return GroupSize(float(result.estimate), float(low), float(high), False)


def group_size(
    request: AnalysisRequest,
    where: Sequence[Condition] | None = None,
    *,
    counted: Callable[[list[Condition]], tuple[queries.CellPlan, queries.CellTable]] | None = None,
) -> GroupSize:
    """The size of the group ``where`` (default: the request's condition) selects.

    Without a condition the group is every participant counted for the request (exact).
    With one: the exact count on undistorted attributes, else the engine's joint count
    with its interval (see the module docstring). ``counted(conditions)`` may supply the
    plan and cell table (:func:`reconstruction.analysis.plan` and
    :func:`~reconstruction.analysis.cells` of the same conditions) when the caller has
    read them already (sampling reuses them for its posterior). It is
    :func:`fit_group` of :func:`read_group`.
    """
    return fit_group(read_group(request, where, counted=counted))


def check_group(size: GroupSize, threshold: int, *, label: Message | str = "") -> None:
    """Refuse (:class:`JobRefused`) a group whose size is not :func:`publishable`.

    The reason names the threshold, never the size; ``label`` (translatable) prefixes it.
    A group counted on exact attributes is judged on its *published* interval (its
    perturbed size within 2): judged on its true size, a published 3 would say "at least
    the threshold of 5, at most 2 away": exactly 5.
    """
    if not publishable(size.published_ci95 if size.perturbed else size.ci95, threshold):
        reason = analysis.group_too_small(threshold)
        if label:
            reason = Message(
                gettext_noop("%(label)s%(reason)s"), {"label": label, "reason": reason}
            )
        raise JobRefused(reason)


def check_answerers(request: AnalysisRequest, size: GroupSize) -> None:
    """Refuse a result without a condition whose answerers' count is published perturbed
    (an exact question's distribution ``n``, an exact mean's ``group_size``) unless that
    published count's interval reaches ``min_responses``, as a report judges its response
    count (issue 26).

    The worker's start (:func:`reconstruction.kinds.base.start`) refused fewer true
    answerers already; judged only there, a published 9 (an optional question answered
    by 11, moved by -2) beside the rule "at least 10" would leave only 10 or 11. The
    reason is the start's own, so the two refusals read the same and name no number
    below the threshold.
    """
    if not size.perturbed:
        return
    interval = size.published_ci95
    if publishable(interval, request.thresholds.min_responses):
        return
    reason = analysis.too_few_responses(request, math.floor(interval[0]))
    assert reason is not None  # below the threshold: the start's message
    raise JobRefused(reason)


def at_most_half(size: float, pool: float) -> bool:
    """A sample, stratum or panel takes at most half of its estimated pool (issue 26), so
    no list is ever a whole pool: two lists minus each other name nobody for certain."""
    return 2 * float(size) <= float(pool)


def sample_refused(threshold: int) -> Message:
    """The one refusal of a sample or panel that is too large for its pool or that the
    query audit refuses (issue 26): the same words either way, the threshold and what
    to change, never a pool size."""
    return Message(
        gettext_noop(
            "refused by disclosure control: a sample or panel (and each stratum) may take at "
            "most half of the participants estimated to meet its condition, and no group it "
            "implies may be smaller than the threshold of %(threshold)s; ask for fewer "
            "participants or widen the condition"
        ),
        {"threshold": threshold},
    )


def hidden_cells(
    counts: Any, threshold: int, intervals: Any | None = None
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which cells of a distribution to hide (primary and complementary suppression).

    Primary: a cell whose size's interval (``intervals``, rows ``(low, high)``; the
    counts themselves when exact) is not :func:`publishable`. The total is published,
    so a single hidden cell could be derived by subtraction (002's leak for
    non-responses); the next-smallest shown cell is then hidden too, so only the hidden
    cells' sum is derivable, and more until that sum is itself publishable (its interval
    at or above the threshold) or provably empty.
    """
    values = np.asarray(counts, dtype=np.float64)
    if intervals is None:
        bounds = np.stack([values, values], axis=1)
    else:
        bounds = np.asarray(intervals, dtype=np.float64).reshape(values.size, 2)
    hidden = np.array([not publishable(pair, threshold) for pair in bounds], dtype=bool)
    _complete(values, bounds, hidden, threshold)
    return hidden


def _complete(values: Any, bounds: Any, hidden: Any, threshold: int) -> None:
    """Complementary suppression against the published total (in place)."""
    # The hidden cells' sum is derivable from the total: it is a group like any other.
    # Hide the next-smallest shown cell while that sum is a single cell or its interval
    # (the sum of the hidden cells' bounds, worst case) is neither publishable nor
    # provably empty.
    while hidden.any() and not hidden.all():
        total = hidden_total(bounds, hidden, float(values.sum()))
        if hidden.sum() > 1 and (publishable(total, threshold) or total[1] < 0.5):
            break
        order = np.argsort(np.where(hidden, np.inf, values), kind="stable")
        hidden[order[0]] = True


Line = tuple[Any, tuple[float, float]]
"""A published line total of a two-way table: its cells (a boolean mask over the
table) and its 95% interval."""


def hidden_table(
    counts: Any,
    threshold: int,
    intervals: Any | None = None,
    *,
    rows: Sequence[tuple[float, float] | None] = (),
    columns: Sequence[tuple[float, float] | None] = (),
    hidden: Any | None = None,
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which cells of a two-way table to hide when its total and some of its row and
    column totals are published too (a change's before and after shares).

    First :func:`hidden_cells` of the whole table (primary suppression and its
    complement against the table's total), or ``hidden`` when given. Then per line: a
    published row or column total (``rows[i]``, ``columns[j]``: its interval, ``None``
    when not published) minus the line's shown cells is the line's hidden cells' sum.
    While a line has a single hidden cell, or that sum's worst-case interval
    (:func:`line_hidden_total`: the hidden cells' bounds summed, narrowed by the line's
    total minus the shown cells' bounds) is neither publishable nor provably empty, the
    line's next-smallest shown cell is hidden too. Last, the rows, columns and total
    together must not pin a hidden cell (one whose indicator lies in the span of the
    lines' hidden parts, as a 2 x 2 block of hidden cells never is): the next-smallest
    shown cell of a line through it is hidden then. Repeated until nothing changes.
    """
    values = np.asarray(counts, dtype=np.float64)
    k, m = values.shape
    if intervals is None:
        bounds = np.stack([values, values], axis=-1)
    else:
        bounds = np.asarray(intervals, dtype=np.float64).reshape(k, m, 2)
    flat_values, flat_bounds = values.ravel(), bounds.reshape(-1, 2)
    if hidden is None:
        mask = hidden_cells(flat_values, threshold, flat_bounds)
    else:
        mask = np.array(hidden, dtype=bool).ravel()
    lines = _lines(k, m, rows, columns)
    changed = True
    while changed and not mask.all():
        changed = False
        for line, total in lines:
            while _line_leaks(flat_bounds, mask, line, total, threshold):
                _hide_partner(flat_values, mask, line, [other for other, _ in lines])
                changed = True
        if not changed:
            pinned = _pinned(mask, [line for line, _ in lines])
            if pinned is not None:
                through = [line for line, _ in lines if line[pinned] and (line & ~mask).any()]
                _hide_smallest(flat_values, mask, through[0] if through else ~mask)
                changed = True
        if changed:
            _complete(flat_values, flat_bounds, mask, threshold)
    return mask.reshape(k, m)


def hidden_line_totals(
    intervals: Any, hidden: Any, totals: Sequence[tuple[float, float] | None], *, axis: int
) -> list[tuple[float, float] | None]:
    """Each line's hidden cells' sum as :func:`hidden_table` judged it (rows for
    ``axis=0``, columns for ``axis=1``): its worst-case interval, or ``None`` when the
    line's total is not published, or none or all of its cells are hidden."""
    mask = np.asarray(hidden, dtype=bool)
    k, m = mask.shape
    bounds = np.asarray(intervals, dtype=np.float64).reshape(-1, 2)
    lines = _lines(k, m, totals if axis == 0 else (), totals if axis == 1 else ())
    published = [i for i, total in enumerate(totals) if total is not None]
    out: list[tuple[float, float] | None] = [None] * len(totals)
    flat = mask.ravel()
    for index, (line, total) in zip(published, lines, strict=True):
        inside = flat[line]
        if inside.any() and not inside.all():
            out[index] = line_hidden_total(bounds, flat, line, total)
    return out


def _lines(
    k: int,
    m: int,
    rows: Sequence[tuple[float, float] | None],
    columns: Sequence[tuple[float, float] | None],
) -> list[Line]:
    lines: list[Line] = []
    for axis, totals in ((0, rows), (1, columns)):
        for index, total in enumerate(totals):
            if total is None:
                continue
            line = np.zeros((k, m), dtype=bool)
            if axis == 0:
                line[index, :] = True
            else:
                line[:, index] = True
            lines.append((line.ravel(), (float(total[0]), float(total[1]))))
    return lines


def line_hidden_total(
    bounds: Any, hidden: Any, line: Any, total: tuple[float, float]
) -> tuple[float, float]:
    """Worst-case interval of a line's hidden cells' sum: their bounds summed, and at
    most the line's total's bounds minus the shown cells' bounds (:func:`hidden_total`
    with a total known within an interval)."""
    low, high = hidden_total(bounds[line], hidden[line])
    shown = line & ~hidden
    low = max(low, total[0] - float(bounds[shown, 1].sum()))
    high = min(high, total[1] - float(bounds[shown, 0].sum()))
    return (low, high)


def _line_leaks(
    bounds: Any, hidden: Any, line: Any, total: tuple[float, float], threshold: int
) -> bool:
    inside = hidden[line]
    if not inside.any() or inside.all():
        return False
    if inside.sum() == 1:
        return True
    low, high = line_hidden_total(bounds, hidden, line, total)
    return not (publishable((low, high), threshold) or high < 0.5)


def _hide_partner(values: Any, hidden: Any, line: Any, lines: Sequence[Any]) -> None:
    """Hide a shown cell of ``line``: the smallest one whose crossing line already has a
    hidden cell (which then gains a partner rather than a new single hidden cell: the
    hidden cells close a rectangle), else the smallest."""
    candidates = [int(c) for c in np.flatnonzero(line & ~hidden)]
    crossing = [other for other in lines if other is not line and (other & hidden).any()]
    preferred = [c for c in candidates if any(other[c] for other in crossing)]
    pick = min(preferred or candidates, key=lambda c: (values[c], c))
    hidden[pick] = True


def _hide_smallest(values: Any, hidden: Any, mask: Any) -> None:
    order = np.argsort(np.where(mask & ~hidden, values, np.inf), kind="stable")
    hidden[order[0]] = True


def _pinned(hidden: Any, masks: Sequence[Any]) -> int | None:
    """A hidden cell that the lines' totals (and the table's) determine, or ``None``."""
    cells = np.flatnonzero(hidden)
    if cells.size == 0:
        return None
    matrix = np.array([mask[cells] for mask in [*masks, np.ones_like(hidden)]], dtype=float)
    projection = np.linalg.pinv(matrix) @ matrix
    determined = np.flatnonzero(np.diag(projection) > 1.0 - 1e-9)
    return int(cells[determined[0]]) if determined.size else None


def hidden_total(bounds: Any, hidden: Any, total: float | None = None) -> tuple[float, float]:
    """Worst-case interval of the hidden cells' sum: the sums of their bounds, and (with
    the published ``total``) at most ``total`` minus the shown cells' bounds."""
    all_rows = np.asarray(bounds, dtype=np.float64).reshape(-1, 2)
    mask = np.asarray(hidden, dtype=bool)
    low, high = float(all_rows[mask, 0].sum()), float(all_rows[mask, 1].sum())
    if total is not None:
        low = max(low, total - float(all_rows[~mask, 1].sum()))
        high = min(high, total - float(all_rows[~mask, 0].sum()))
    return (low, high)


def suppression_reason(threshold: int) -> str:
    return (
        f"cells whose 95% interval reaches below {threshold} are shown as null (with the "
        "next-smallest cell when only one was, so it cannot be derived from the total)"
    )


__all__ = [
    "GroupCells",
    "GroupSize",
    "at_most_half",
    "check_answerers",
    "check_group",
    "fit_group",
    "group_size",
    "hidden_cells",
    "hidden_line_totals",
    "hidden_table",
    "hidden_total",
    "is_exact",
    "line_hidden_total",
    "publishable",
    "read_group",
    "sample_refused",
    "suppression_reason",
]
