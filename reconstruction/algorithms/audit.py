"""Query auditing: refuse a result that, with results already published, implies a small cell.

Pure module: numpy and scipy (one linear programme) only.

Each published count is the estimated size of a *box*: a conjunction of conditions, one
set of categories per discrete attribute and one interval per continuous attribute
(001_28af1923c784b480.txt, Section IV-A1 defines the conjunctive conditions). Per-query
thresholds (002_f0fd5869fe299975.txt: 10 responses per question, 5 per cell) do not stop
an analyst who asks several queries: ``count(F) - count(F and district in {N,S,E,W})``
is the refused cell ``count(F and district = C)`` (issue 13, finding 1). This module
judges a new set of results against the published ones:

1. **Partition.** All boxes (published, new, and the whole population, whose size is
   public) cut each attribute into *pieces*: its categories, or the intervals between
   every threshold any condition uses on it (clipped to the question's range, outside of
   which nobody is). A box is then a set of *atoms*, the products of pieces.
2. **Nested differences.** When one box contains another, their difference is implied.
   Its interval is ``[lo_big - hi_small, hi_big - lo_small]``, and it is at least the
   lower ends of disjoint published boxes inside it (a row's total minus one of its
   cells is at least the row's other shown cells, issue 29).
3. **Linear combinations.** With few enough atoms and results (``max_atoms``,
   ``max_results``), every atom whose indicator lies in the span of the results'
   indicators is implied exactly by a linear combination ``sum_i c_i y_i``; its interval
   is the combination's centre plus or minus ``sum_i |c_i| halfwidth_i`` (worst case,
   no independence assumed). The minimum-norm combination is judged first; when it
   reaches below the threshold, the narrowest one (a linear programme) decides, since
   any combination that shows the cell large (or empty) proves it (issue 29: the
   minimum-norm one spread a before-only group over every transition cell).

A cell that a result publishes directly is left to the per-query rule (suppression).
An implied cell, whether a nested difference (step 2) or a linear combination (step 3),
is judged by the rule for published cells (issue 10: a group is published only when its
size's 95% interval lies at or above the threshold): it is refused unless its interval
lies at or above ``threshold``, or it is provably empty (upper end below one half: an
empty cell names nobody). A combination's worst-case interval adds the widths of every
result it uses, so on wide reconstructed intervals the rule refuses more than the point
estimates would. Only implications that use at least one new result are reported: older
ones were judged when they were published.

4. **Unions that are boxes** (issue 26). A cell the analyst could have asked for is a
   box, and once other results cut its attributes finer it is a union of atoms, which
   step 3 does not see. Every box built from the pieces (per discrete attribute: the
   sets the results use, their complements and single categories; per continuous one:
   every run of consecutive pieces) whose indicator lies in the span is judged as in
   step 3, up to ``max_boxes`` boxes, when every result its combination uses is exact
   or perturbed by the cell key (half-width at most ``max_union_half_width``, 2).
   Results reconstructed from distorted answers are protected by their distortion
   (local differential privacy), and the worst case of a combination of their wide
   intervals would refuse runs of cells that are plainly large; their unions are left
   to steps 2 and 3 as before.

Limits: unions of atoms that are not boxes (e.g. "C and owner, or N and renter") are
not judged; beyond ``max_atoms`` atoms or ``max_results`` results only step 2 runs, and
beyond ``max_boxes`` boxes step 4 does not run. Refusal reasons never state the implied
number.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog

# A continuous cut at t. Whether t itself lies below or above the cut (``lte t`` vs
# ``between [t, ...)``) is not told apart: the single point t is not a piece of its own,
# which would otherwise be an implied sliver between every two conditions (README: limits).
Cut = tuple[float, int]


@dataclass(frozen=True)
class Discrete:
    """A discrete attribute's universe: its number of categories (codes 0..k-1)."""

    k: int


@dataclass(frozen=True)
class Continuous:
    """A continuous attribute's universe: the declared range ``[low, high]``."""

    low: float
    high: float


Universe = Mapping[str, Discrete | Continuous]


def _pair(value: object) -> tuple[float, float]:
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ValueError(f"'between' needs [t1, t2], got {value!r}")
    return float(value[0]), float(value[1])


@dataclass(frozen=True)
class Box:
    """A conjunction: categories per discrete attribute, ``[lower, upper)`` cuts per continuous one.

    Attributes
    ----------
    categories : tuple of (str, frozenset of int)
        Allowed codes of each discrete attribute the box restricts.
    intervals : tuple of (str, Cut or None, Cut or None)
        Lower and upper cut of each continuous attribute the box restricts (``None``:
        unbounded). A value ``v`` is inside when it lies above the lower cut and below
        the upper cut.
    """

    categories: tuple[tuple[str, frozenset[int]], ...] = ()
    intervals: tuple[tuple[str, Cut | None, Cut | None], ...] = ()

    @staticmethod
    def of(conditions: Sequence[tuple[str, str, object]]) -> Box:
        """The box of ``(attribute, op, value)`` conditions (ops as api.md: in, gt, lte, between).

        ``in`` takes category codes; ``gt t`` is ``v > t``; ``lte t`` is ``v <= t``;
        ``between (t1, t2)`` is ``t1 <= v < t2``. Several conditions on one attribute
        intersect.
        """
        categories: dict[str, frozenset[int]] = {}
        lower: dict[str, Cut | None] = {}
        upper: dict[str, Cut | None] = {}
        for attribute, op, value in conditions:
            if op == "in":
                assert isinstance(value, (set, frozenset, list, tuple))
                codes = frozenset(int(v) for v in value)
                categories[attribute] = categories.get(attribute, codes) & codes
                continue
            low: Cut | None
            high: Cut | None
            if op == "gt":
                low, high = (float(value), 0), None  # type: ignore[arg-type]
            elif op == "lte":
                low, high = None, (float(value), 0)  # type: ignore[arg-type]
            elif op == "between" or op == "between_closed":
                t1, t2 = _pair(value)
                low, high = (t1, 0), (t2, 0)
            else:
                raise ValueError(f"unknown op {op!r}")
            old_low, old_high = lower.get(attribute), upper.get(attribute)
            lower[attribute] = (
                low if old_low is None else (old_low if low is None else max(old_low, low))
            )
            upper[attribute] = (
                high if old_high is None else (old_high if high is None else min(old_high, high))
            )
        return Box(
            categories=tuple(sorted(categories.items())),
            intervals=tuple(sorted((a, lower[a], upper[a]) for a in lower)),
        )


@dataclass(frozen=True)
class Published:
    """A published (or about to be published) estimate of a box's size and its 95% interval."""

    box: Box
    estimate: float
    low: float
    high: float

    @staticmethod
    def exact(box: Box, value: float) -> Published:
        return Published(box, float(value), float(value), float(value))


@dataclass(frozen=True)
class Finding:
    """An implied small cell: which results imply it (indices into ``published + new``)."""

    uses: tuple[int, ...]
    kind: str  # "difference", "combination" or "union"


class _Pieces:
    """Each attribute cut into pieces by every box's conditions (clipped to its range)."""

    def __init__(self, universe: Universe, boxes: Sequence[Box]) -> None:
        self.attributes: list[str] = []
        self.sizes: list[int] = []
        self.cuts: dict[str, list[Cut]] = {}
        self.kept: dict[str, list[int]] = {}
        used = sorted(
            {a for box in boxes for a, _ in box.categories}
            | {a for box in boxes for a, _, _ in box.intervals}
        )
        for attribute in used:
            space = universe.get(attribute)
            if space is None:
                raise ValueError(f"no universe for attribute {attribute!r}")
            self.attributes.append(attribute)
            if isinstance(space, Discrete):
                self.sizes.append(space.k)
                continue
            cuts = {(space.low, 0), (space.high, 0)}
            for box in boxes:
                for name, low, high in box.intervals:
                    if name == attribute:
                        cuts.update(c for c in (low, high) if c is not None)
            ordered = sorted(cuts)
            self.cuts[attribute] = ordered
            # Piece j lies between cut j-1 and cut j; keep those inside [low, high].
            inside = [
                j
                for j in range(len(ordered) + 1)
                if j > 0
                and j < len(ordered)
                and ordered[j - 1] >= (space.low, 0)
                and ordered[j] <= (space.high, 0)
            ]
            self.kept[attribute] = inside
            self.sizes.append(len(inside))

    def sets(self, box: Box) -> list[frozenset[int]]:
        """The piece indices the box allows on each attribute (in ``attributes`` order)."""
        categories = dict(box.categories)
        intervals = {a: (low, high) for a, low, high in box.intervals}
        out: list[frozenset[int]] = []
        for attribute, size in zip(self.attributes, self.sizes, strict=True):
            if attribute in categories:
                out.append(frozenset(c for c in categories[attribute] if 0 <= c < size))
            elif attribute in intervals:
                low, high = intervals[attribute]
                ordered = self.cuts[attribute]
                kept = self.kept[attribute]
                first = 0 if low is None else ordered.index(low) + 1
                last = len(ordered) if high is None else ordered.index(high)
                out.append(frozenset(i for i, j in enumerate(kept) if first <= j <= last))
            else:
                out.append(frozenset(range(size)))
        return out


def _small(low: float, high: float, threshold: float) -> bool:
    """The implied cell's interval reaches below the threshold and it is not shown empty.

    The negation of the threshold point (``reconstruction/disclosure.py``,
    ``privacy.mechanisms.group_publishable``) for an implied cell, plus the empty cell.
    A NaN bound is not evidence of a large cell (nor of an empty one).
    """
    return not (low >= threshold) and not (high < 0.5)


def _contains(big: list[frozenset[int]], small: list[frozenset[int]]) -> bool:
    return all(s <= b for s, b in zip(small, big, strict=True))


def _span(
    matrix: NDArray[np.float64], tol: float
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Thin SVD restricted to the row space (singular values above ``tol`` relative)."""
    u, s, vt = np.linalg.svd(matrix, full_matrices=False)
    if s.size == 0:
        return u, s, vt
    rank = int(np.sum(s > tol * max(1.0, float(s[0]))))
    return u[:, :rank], s[:rank], vt[:rank]


def audit(
    universe: Universe,
    published: Sequence[Published],
    new: Sequence[Published],
    threshold: float,
    *,
    max_atoms: int = 4096,
    max_results: int = 400,
    max_boxes: int = 20_000,
    max_union_half_width: float = 2.0,
    max_programmes: int = 64,
    tol: float = 1e-8,
) -> Finding | None:
    """The first small cell that ``new`` implies together with ``published``, or ``None``.

    Parameters
    ----------
    universe : mapping of str to Discrete or Continuous
        Every attribute a box names, with its categories or its range.
    published : sequence of Published
        Results already published for the survey, including the population (its size
        is public) as the box ``Box()``.
    new : sequence of Published
        The results about to be published.
    threshold : float
        The cell threshold (002_f0fd5869fe299975.txt: 5 per cell).
    max_atoms, max_results : int
        Bounds on the linear-combination check (step 3 of the module docstring).
    max_boxes, max_union_half_width : int, float
        Bounds on the unions check (step 4): the number of candidate boxes, and the
        widest half-interval of a result a judged combination may use.
    max_programmes : int
        How many implied cells step 3 may judge again on their narrowest combination (a
        linear programme each); a further cell that the minimum-norm one finds small is
        refused.
    tol : float
        Numerical tolerance of the span test.

    Returns
    -------
    Finding or None
        Which results imply a small cell, never the cell's size.
    """
    results = [*published, *new]
    first_new = len(published)
    if not new:
        return None
    pieces = _Pieces(universe, [r.box for r in results])
    sets = [pieces.sets(r.box) for r in results]

    # Step 2: nested differences involving a new result.
    for i in range(first_new, len(results)):
        for j in range(len(results)):
            if i == j or sets[i] == sets[j]:
                continue
            for big, small in ((i, j), (j, i)):
                if _contains(sets[big], sets[small]):
                    # (an unbounded end gives an infinite or NaN bound: judged small)
                    low = results[big].low - results[small].high
                    high = results[big].high - results[small].low
                    if _small(low, high, threshold) and (
                        _inner_floor(sets, results, big, small) < threshold
                    ):
                        return Finding(uses=tuple(sorted((i, j))), kind="difference")

    # Step 3: single atoms in the span of the results.
    n_atoms = math.prod(pieces.sizes) if pieces.sizes else 1
    if n_atoms > max_atoms or len(results) > max_results:
        return None
    matrix = np.zeros((len(results), n_atoms))
    shape = tuple(pieces.sizes)
    for row, allowed in enumerate(sets):
        if not shape:
            matrix[row, 0] = 1.0
            continue
        for atom in itertools.product(*[sorted(s) for s in allowed]):
            matrix[row, np.ravel_multi_index(atom, shape)] = 1.0
    u, s, vt = _span(matrix, tol)
    if s.size == 0:
        return None
    leverage = np.sum(vt**2, axis=0)
    known = np.zeros(n_atoms, dtype=bool)
    s_old = vt_old = np.zeros(0)
    if first_new:  # atoms the published results imply already were judged before
        _, s_old, vt_old = _span(matrix[:first_new], tol)
        if s_old.size:
            known = np.sum(vt_old**2, axis=0) > 1.0 - 1e-6
    # A cell that some result publishes directly is judged by the per-query rule
    # (suppression), not here.
    single = matrix.sum(axis=1) == 1
    known[np.flatnonzero(matrix[single].any(axis=0))] = True
    # A result with an unbounded (unknown) end has no finite centre: any combination
    # that uses it is refused, and one that does not is unaffected (only the results a
    # combination uses enter its sums).
    with np.errstate(invalid="ignore"):
        centre = np.array([(r.low + r.high) / 2 for r in results])
        half = np.array([(r.high - r.low) / 2 for r in results])
    programmes = 0
    for column in np.flatnonzero((leverage > 1.0 - 1e-6) & ~known):
        coefficients: NDArray[np.float64] = u @ (vt[:, column] / s)
        finding = _judge(coefficients, centre, half, first_new, threshold, "combination")
        if finding is not None:
            # The minimum-norm combination spreads over every result; the narrowest
            # one may show the cell is large (or empty) after all (at most
            # ``max_programmes`` times: beyond, refused as before).
            programmes += 1
            if programmes > max_programmes:
                return finding
            narrowest = _narrowest(matrix, int(column), half)
            if narrowest is None or _judge(
                narrowest, centre, half, first_new, threshold, "combination"
            ):
                return finding

    # Step 4: unions of atoms that are boxes themselves (issue 26, the three-box
    # tracker: count(C) + count(N) - count(item=N and district in {C, N}) is the box
    # district in {C, N} and item=Y, two atoms once the item splits them).
    old_vt = vt_old if first_new and s_old.size else None
    with np.errstate(invalid="ignore"):
        narrow = half <= max_union_half_width + 1e-9
    for indicators in _union_boxes(pieces, sets, max_boxes=max_boxes):
        projected = indicators @ vt.T
        inside = np.max(np.abs(indicators - projected @ vt), axis=1) < 1e-6
        if old_vt is not None:  # implied by the published results alone: judged before
            old = np.max(np.abs(indicators - (indicators @ old_vt.T) @ old_vt), axis=1)
            inside &= old > 1e-6
        for index in np.flatnonzero(inside):
            coefficients = u @ (projected[index] / s)
            if np.any((np.abs(coefficients) > 1e-9) & ~narrow):
                continue  # uses a reconstructed (distorted) result: see the docstring
            finding = _judge(coefficients, centre, half, first_new, threshold, "union")
            if finding is not None and _floor(matrix, results, indicators[index]) < threshold:
                return finding
    return None


def _floor(
    matrix: NDArray[np.float64], results: Sequence[Published], box: NDArray[np.float64]
) -> float:
    """A lower bound of a box's size from published boxes inside it: the sum of the lower
    ends of disjoint ones (largest first). The minimum-norm combination of step 4 can be
    far wider than what is known (a run of cells that holds a published cell of 40 is
    at least 40, whatever the combination's worst case says)."""
    outside = matrix @ (1.0 - box) > 0.5
    taken = np.zeros(box.size, dtype=bool)
    floor = 0.0
    inside = [int(r) for r in np.flatnonzero(~outside)]
    # Largest first; a lower end that is not a number (NaN) sorts last, as it would
    # otherwise break the order (every comparison with NaN is false) and let a small box
    # take the atoms of a larger one.
    for row in sorted(inside, key=lambda r: _largest_first(results[r].low)):
        low = results[row].low
        atoms = matrix[row] > 0.5
        if not np.isfinite(low) or low <= 0 or (taken & atoms).any():
            continue
        taken |= atoms
        floor += low
    return floor


def _narrowest(
    matrix: NDArray[np.float64], column: int, half: NDArray[np.float64]
) -> NDArray[np.float64] | None:
    """The combination of results that implies atom ``column`` with the narrowest
    worst-case interval (``min sum_i |c_i| halfwidth_i`` subject to ``c @ matrix`` being
    the atom's indicator: a linear programme), or ``None`` when it finds none. Every
    combination's interval holds the cell when the results' intervals hold theirs, so a
    cell that the narrowest shows to lie at or above the threshold (or to be empty) is
    not small, however wide the minimum-norm one of step 3 is (a change's share before
    against the before question's distribution, issue 29: the minimum-norm combination
    also spread over every transition cell and the other categories)."""
    usable = np.isfinite(half)
    if not usable.any():
        return None
    rows = matrix[usable]
    weights = np.asarray(half[usable], dtype=np.float64) + 1e-6
    target = np.zeros(matrix.shape[1])
    target[column] = 1.0
    solved = linprog(
        np.concatenate([weights, weights]),
        A_eq=np.hstack([rows.T, -rows.T]),
        b_eq=target,
        bounds=(0, None),
        method="highs",
    )
    if solved.status != 0:
        return None
    m = rows.shape[0]
    out = np.zeros(matrix.shape[0])
    out[usable] = solved.x[:m] - solved.x[m:]
    if np.max(np.abs(out @ matrix - target)) > 1e-6:
        return None
    return out


def _inner_floor(
    sets: Sequence[list[frozenset[int]]], results: Sequence[Published], big: int, small: int
) -> float:
    """A lower bound of the difference ``big - small`` (step 2) from published boxes that
    lie inside it: the sum of the lower ends of disjoint ones (largest first), as
    :func:`_floor` for step 4. A row total minus one of its cells is at least the row's
    other published cells, however wide the two results' worst case is (a change's
    share before against its own transition cells, issue 29)."""
    taken: list[list[frozenset[int]]] = []
    floor = 0.0
    inside = [
        r
        for r in range(len(results))
        if r not in (big, small)
        and _contains(sets[big], sets[r])
        and _disjoint(sets[r], sets[small])
    ]
    for r in sorted(inside, key=lambda r: _largest_first(results[r].low)):
        low = results[r].low
        if not np.isfinite(low) or low <= 0 or not all(_disjoint(sets[r], t) for t in taken):
            continue
        taken.append(sets[r])
        floor += low
    return floor


def _disjoint(a: list[frozenset[int]], b: list[frozenset[int]]) -> bool:
    return any(not (x & y) for x, y in zip(a, b, strict=True))


def _largest_first(low: float) -> float:
    """Sort key of :func:`_floor`: larger lower ends first, NaN and -inf last."""
    return -low if np.isfinite(low) else math.inf


def _judge(
    coefficients: NDArray[np.float64],
    centre: NDArray[np.float64],
    half: NDArray[np.float64],
    first_new: int,
    threshold: float,
    kind: str,
) -> Finding | None:
    """The implied cell ``sum_i c_i y_i`` when it uses a new result and is small."""
    coefficients = coefficients.copy()
    # Snap rounding noise: a combination of 0/1 indicator rows mostly has whole
    # coefficients (0, 1, -1), and the SVD's 1 - 1e-15 would judge an implied cell of
    # exactly the threshold (53 - 48 = 5) as 4.99999999999999, below it.
    whole = np.round(coefficients)
    near = np.abs(coefficients - whole) < 1e-9
    coefficients[near] = whole[near]
    if not np.any(coefficients[first_new:]):
        return None
    used = coefficients != 0.0
    with np.errstate(invalid="ignore"):
        mid = float(coefficients[used] @ centre[used])
        spread = float(np.abs(coefficients[used]) @ half[used])
    if _small(mid - spread, mid + spread, threshold):
        return Finding(uses=tuple(int(k) for k in np.flatnonzero(coefficients)), kind=kind)
    return None


def _union_boxes(
    pieces: _Pieces, sets: Sequence[list[frozenset[int]]], *, max_boxes: int, batch: int = 512
) -> Iterator[NDArray[np.float64]]:
    """Indicators (rows over the atoms) of the boxes step 4 judges, in batches.

    Per attribute: every set of pieces a result's box uses, its complement and every
    single piece (discrete), or every run of consecutive pieces (continuous); their
    products, except single atoms (step 3), the whole population and the results' own
    boxes (judged when published). Nothing when there are more than ``max_boxes``.
    """
    options: list[list[frozenset[int]]] = []
    for position, (attribute, size) in enumerate(zip(pieces.attributes, pieces.sizes, strict=True)):
        whole = frozenset(range(size))
        found: set[frozenset[int]] = {whole}
        if attribute in pieces.cuts:
            found |= {frozenset(range(a, b + 1)) for a in range(size) for b in range(a, size)}
        else:
            found |= {frozenset([i]) for i in range(size)}
            for allowed in sets:
                found |= {allowed[position], whole - allowed[position]}
        options.append(sorted((o for o in found if o), key=sorted))
    if not options or math.prod(len(o) for o in options) > max_boxes:
        return
    shape = tuple(pieces.sizes)
    own = {tuple(allowed) for allowed in sets}
    rows: list[NDArray[np.float64]] = []
    for choice in itertools.product(*options):
        if all(len(c) == 1 for c in choice) or tuple(choice) in own:
            continue
        if all(len(c) == size for c, size in zip(choice, shape, strict=True)):
            continue
        row = np.zeros(shape)
        row[np.ix_(*[sorted(c) for c in choice])] = 1.0
        rows.append(row.ravel())
        if len(rows) == batch:
            yield np.asarray(rows)
            rows = []
    if rows:
        yield np.asarray(rows)
