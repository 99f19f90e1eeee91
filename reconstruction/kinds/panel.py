"""The ``panel`` analysis kind (issue 14): a fair lottery over quota-satisfying panels.

The kind of api.md's ``kind: "panel"``: request checks that need the schema only
(:func:`validate_panel`), and the worker's stages: :func:`gather` reads the eligible pool's
and every quota category's cells and the answers in bounded columns
(:func:`reconstruction.analysis.load`, as ``sample`` does), :func:`fit` applies disclosure
control to the pool and to every quota category and calls the
pure maths of :func:`reconstruction.algorithms.panel.select_panel` (maximin, Nash or
LEXIMIN of Flanigan et al., "Fair algorithms for selecting citizens' assemblies", Nature
2021, on posteriors of the distorted answers; see that module for where and why it
differs), and :func:`publish` reads the chosen participants' references and shapes the
result. Every candidate's selection probability is stored as a CSV attachment of the job
and served by ``GET /api/v1/analyses/{id}/probabilities.csv``.

What the quotas guarantee is said plainly in the result (``guarantee``): answers are
distorted, so quotas hold for the *expected* true counts only; each quota's 95% interval
shows how far the realised count plausibly lies from it.
"""

from __future__ import annotations

import csv
import io
import math
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message, note_json
from reconstruction import analysis, cost, disclosure
from reconstruction.algorithms import queries
from reconstruction.algorithms.audit import Box, Published
from reconstruction.algorithms.panel import (
    InfeasibleQuotas,
    PanelResult,
    Quota,
    TooManyTypes,
    select_panel,
)
from reconstruction.analysis import (
    AnalysisInputError,
    AnalysisRequest,
    ConditionSpec,
    interval_json,
)
from reconstruction.jobs import JobInputError, JobRefused
from reconstruction.kinds import base

NAME = "panel"
OBJECTIVES = ("maximin", "nash", "leximin")
REFERENCE_CHUNK = 5000


# --------------------------------------------------------------------------- request


@dataclass(frozen=True)
class QuotaSpec:
    """One quota as asked: its category's conditions and its band of seats."""

    where: tuple[ConditionSpec, ...]
    min: int
    max: int


@dataclass(frozen=True)
class Request(base.KindRequest):
    """A panel: its size, reserves, quotas, objective, seed and ``max_outside``."""

    size: int | None = None
    reserves: int = 0
    objective: str = "maximin"
    seed: int | None = None
    max_outside: float | None = None
    quotas: tuple[QuotaSpec, ...] = ()

    def condition_keys(self) -> list[str]:
        keys = super().condition_keys()
        for quota in self.quotas:  # the quota categories
            keys += [c.attribute for c in quota.where]
        return keys


def parse(spec: Mapping[str, Any]) -> Request:
    size, seed, max_outside = spec.get("size"), spec.get("seed"), spec.get("max_outside")
    return Request(
        **base.common_fields(spec, None),
        size=None if size is None else int(size),
        reserves=int(spec.get("reserves") or 0),
        objective=str(spec.get("objective") or "maximin"),
        seed=None if seed is None else int(seed),
        max_outside=None if max_outside is None else float(max_outside),
        quotas=tuple(
            QuotaSpec(base.conditions(q["where"]), q["min"], q["max"])
            for q in spec.get("quotas") or ()
        ),
    )


# --------------------------------------------------------------------------- labels


def quota_label(index: int, quota: QuotaSpec) -> str:
    return f"quotas[{index}] ({' and '.join(c.label() for c in quota.where)})"


# --------------------------------------------------------------------------- request checks


@dataclass(frozen=True)
class _Region:
    """The values of one attribute a quota's conditions admit: codes, or an interval."""

    codes: frozenset[int] | None = None
    low: float = -math.inf
    low_closed: bool = True
    high: float = math.inf
    high_closed: bool = True

    def meets(self, other: _Region) -> bool:
        """Whether the two regions share a value."""
        if self.codes is not None and other.codes is not None:
            return bool(self.codes & other.codes)
        low, low_closed = max(
            (self.low, self.low_closed),
            (other.low, other.low_closed),
            key=lambda p: (p[0], not p[1]),
        )
        high, high_closed = min(
            (self.high, self.high_closed),
            (other.high, other.high_closed),
            key=lambda p: (p[0], p[1]),
        )
        return low < high or (low == high and low_closed and high_closed)


def _region(conditions: Sequence[queries.Condition], question: Any) -> _Region:
    if question.is_discrete:
        codes = frozenset(range(len(question.categories)))
        for condition in conditions:
            codes &= condition.value  # type: ignore[operator]
        return _Region(codes=codes)
    low, low_closed = float(question.range_low), True
    high, high_closed = float(question.range_high), True
    for condition in conditions:
        if condition.op == "gt":
            pieces = [(float(condition.value), False, math.inf, True)]  # type: ignore[arg-type]
        elif condition.op == "lte":
            pieces = [(-math.inf, True, float(condition.value), True)]  # type: ignore[arg-type]
        else:
            a, b = condition.value  # type: ignore[misc]
            pieces = [(float(a), True, float(b), False)]
        for a, a_closed, b, b_closed in pieces:
            if (a, not a_closed) > (low, not low_closed):
                low, low_closed = a, a_closed
            if (b, b_closed) < (high, high_closed):
                high, high_closed = b, b_closed
    return _Region(None, low, low_closed, high, high_closed)


def _covers(regions: Sequence[_Region], question: Any) -> bool:
    """Whether the regions together admit every value of the question."""
    if question.is_discrete:
        union: frozenset[int] = frozenset()
        for region in regions:
            union |= region.codes or frozenset()
        return union == frozenset(range(len(question.categories)))
    reach, reach_closed = float(question.range_low), False  # nothing covered yet
    for region in sorted(regions, key=lambda r: (r.low, not r.low_closed)):
        if region.low > reach or (
            region.low == reach and not region.low_closed and not reach_closed
        ):
            return False
        if (region.high, region.high_closed) > (reach, reach_closed):
            reach, reach_closed = region.high, region.high_closed
    top = float(question.range_high)
    return reach > top or (reach == top and reach_closed)


def _check_bands(
    request: AnalysisRequest, quotas: Sequence[tuple[list[queries.Condition], int, int]], size: int
) -> None:
    """Quotas on one attribute whose categories do not overlap: their minimums cannot sum
    above the panel size, nor (when they cover every value) their maximums below it."""
    raw = _params(request).quotas
    by_attribute: dict[str, list[int]] = {}
    for j, (where, _low, _high) in enumerate(quotas):
        keys = {c.attribute for c in where}
        if len(keys) == 1:
            by_attribute.setdefault(next(iter(keys)), []).append(j)
    for key, members in by_attribute.items():
        question = request.questions[key]
        regions = [_region(quotas[j][0], question) for j in members]
        overlap = any(
            regions[a].meets(regions[b])
            for a in range(len(regions))
            for b in range(a + 1, len(regions))
        )
        if overlap:
            continue  # overlapping categories: the solver decides (InfeasibleQuotas)
        names = ", ".join(quota_label(j, raw[j]) for j in members)
        low = sum(quotas[j][1] for j in members)
        if low > size:
            raise AnalysisInputError(
                {
                    "quotas": Message(
                        gettext_noop(
                            "the minimums of the quotas on %(key)s (%(names)s) add up to %(low)s, "
                            "more than the panel size %(size)s; these categories do not overlap, "
                            "so no panel can meet them all"
                        ),
                        {"key": repr(key), "names": names, "low": low, "size": size},
                    )
                }
            )
        high = sum(quotas[j][2] for j in members)
        if high < size and _covers(regions, question):
            raise AnalysisInputError(
                {
                    "quotas": Message(
                        gettext_noop(
                            "the maximums of the quotas on %(key)s (%(names)s) add up to %(high)s, "
                            "less than the panel size %(size)s; these categories cover every "
                            "value of %(key)s, so every member counts in one of them"
                        ),
                        {"key": repr(key), "names": names, "high": high, "size": size},
                    )
                }
            )


def _check_duplicates(
    quotas: Sequence[tuple[list[queries.Condition], int, int]], raw: Sequence[QuotaSpec]
) -> None:
    """Two quotas on the same category (the same conditions, in any order) are a 400: a
    category has one band. Repeated, they would either restate it or, with bands that
    differ, leave the solver to refuse the job for a conflict the request already shows."""
    seen: dict[frozenset[queries.Condition], int] = {}
    for j, (where, _low, _high) in enumerate(quotas):
        key = frozenset(where)
        first = seen.setdefault(key, j)
        if first != j:
            raise AnalysisInputError(
                {
                    "quotas": Message(
                        gettext_noop(
                            "%(quota)s repeats the category of %(first)s; give each category "
                            "one quota, with one band from min to max"
                        ),
                        {"quota": quota_label(j, raw[j]), "first": quota_label(first, raw[first])},
                    )
                }
            )


def _params(request: AnalysisRequest) -> Request:
    params = request.params
    assert isinstance(params, Request)
    return params


def parse_quotas(request: AnalysisRequest) -> list[tuple[list[queries.Condition], int, int]]:
    """The request's quotas as engine conditions with their bounds (400s on bad ones)."""
    parsed = []
    for j, quota in enumerate(_params(request).quotas):
        where = analysis.parse_where(quota.where, request.questions, f"quotas[{j}].where")
        low, high = quota.min, quota.max
        for name, value in (("min", low), ("max", high)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise AnalysisInputError(
                    {
                        f"quotas[{j}].{name}": Message(
                            gettext_noop("must be a non-negative integer, got %(value)s"),
                            {"value": repr(value)},
                        )
                    }
                )
        if low > high:
            raise AnalysisInputError(
                {
                    f"quotas[{j}]": Message(
                        gettext_noop("min %(min)s is larger than max %(max)s"),
                        {"min": low, "max": high},
                    )
                }
            )
        parsed.append((where, int(low), int(high)))
    return parsed


def validate_panel(request: AnalysisRequest) -> None:
    """Request-time checks (schema and one participant count, no fit)."""
    params = _params(request)
    if params.strata:
        raise AnalysisInputError(
            {"strata": Message(gettext_noop("a panel takes quotas, not strata"))}
        )
    if params.size is None:
        raise AnalysisInputError({"size": Message(gettext_noop("a panel needs its size"))})
    size, reserves, objective = params.size, params.reserves, params.objective
    if objective not in OBJECTIVES:
        raise AnalysisInputError(
            {
                "objective": Message(
                    gettext_noop("unknown objective %(objective)s; use one of %(choices)s"),
                    {"objective": repr(objective), "choices": ", ".join(OBJECTIVES)},
                )
            }
        )
    quotas = parse_quotas(request)
    raw = params.quotas
    if not quotas and not params.where:  # the engine has no attribute to work on
        raise AnalysisInputError(
            {
                "quotas": Message(
                    gettext_noop(
                        "a panel needs at least one quota or a where condition; for a plain "
                        "random draw use kind sample"
                    )
                )
            }
        )
    _check_duplicates(quotas, raw)
    for j, (_where, low, _high) in enumerate(quotas):
        if low > size:
            raise AnalysisInputError(
                {
                    "quotas": Message(
                        gettext_noop(
                            "%(quota)s: min %(min)s is larger than the panel size %(size)s"
                        ),
                        {"quota": quota_label(j, raw[j]), "min": low, "size": size},
                    )
                }
            )
    _check_bands(request, quotas, size)
    if size + reserves > request.participants:
        raise AnalysisInputError(
            {
                "size": Message(
                    gettext_noop(
                        "a panel of %(size)s with %(reserves)s reserves is larger than the "
                        "%(participants)s participants who answered"
                    ),
                    {"size": size, "reserves": reserves, "participants": request.participants},
                )
            }
        )
    cost.check_panel_cost(request)


def admit_panel(request: AnalysisRequest) -> None:
    """The request's count of the real candidate types, from the occupied reported cells
    (one ``GROUP BY``; :func:`reconstruction.cost.check_panel_types`): quotas that split
    the candidates finer than the budget allows are a 400 now, not a job the worker
    refuses seconds later (issue 32). The worker's own check (``max_types``) stays."""
    quotas = [Quota(tuple(where), low, high) for where, low, high in parse_quotas(request)]
    cost.check_panel_types(request, quotas)


# --------------------------------------------------------------------------- worker


def _references(prepared: analysis.PreparedAnalysis, rows: np.ndarray[Any, Any]) -> list[str]:
    out: list[str] = []
    for start in range(0, len(rows), REFERENCE_CHUNK):
        out += analysis.references(prepared, rows[start : start + REFERENCE_CHUNK])
    return out


def probabilities_csv(
    references: Sequence[str],
    probabilities: np.ndarray[Any, Any],
    selected: set[str],
    reserves: Sequence[str],
) -> str:
    """Every candidate's selection probability (the attachment served as CSV)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["participant", "selection_probability", "selected", "reserve_rank"])
    rank = {ref: i + 1 for i, ref in enumerate(reserves)}
    for ref, p in zip(references, probabilities, strict=True):
        shown = f"{float(p):.6f}" if np.isfinite(p) else ""  # withheld: see small_crossing
        writer.writerow([ref, shown, int(ref in selected), rank.get(ref, "")])
    return out.getvalue()


@dataclass(frozen=True)
class Gathered:
    request: AnalysisRequest
    pool: disclosure.GroupCells
    categories: list[disclosure.GroupCells]
    loaded: analysis.PreparedAnalysis
    progress: base.Progress
    """The job's progress writer: the solver reports to it (and stops when cancelled)."""


@dataclass(frozen=True)
class Fitted:
    request: AnalysisRequest
    seed: int
    pool: disclosure.GroupSize
    result: PanelResult
    loaded: analysis.PreparedAnalysis
    exact_quotas: bool = False
    """A quota names an exact attribute: probabilities would tell each candidate's answer."""
    withheld: bool = False
    """Quotas on exact answers cross in a small group: no candidate's probability is shown."""


def gather(request: AnalysisRequest, progress: base.Progress) -> Gathered:
    """The eligible pool's and every quota category's cells, and the answers."""
    request = base.start(request, progress).request
    pool = disclosure.read_group(request)
    categories = [
        disclosure.read_group(request, [*request.where, *where])
        for where, _low, _high in parse_quotas(request)
    ]
    progress(0.15)
    loaded = analysis.load(request)
    progress(0.25)
    return Gathered(request, pool, categories, loaded, progress)


def fit(gathered: Gathered) -> Fitted:
    """Disclosure control on the pool and every quota category, then the lottery."""
    request = gathered.request
    params = _params(request)
    size, reserves = params.size, params.reserves
    assert size is not None
    seed = params.seed
    if seed is None:  # the result names the seed that reproduces the draw
        seed = secrets.randbelow(2**63)
    min_cell = request.thresholds.min_cell
    raw = params.quotas
    parsed = parse_quotas(request)

    # Disclosure control (issue 14): the eligible pool and every quota category within it
    # pass the threshold point of every count (reconstruction/disclosure.py: the size's
    # 95% interval at or above min_cell; exact when the attributes are undistorted);
    # refusals never state a below-threshold number.
    pool = disclosure.fit_group(gathered.pool)
    disclosure.check_group(pool, min_cell, label=Message(gettext_noop("the eligible pool: ")))
    # Never a whole pool (issue 26): members and reserves at most half of the pool as
    # published (perturbed when exact), with the same words as the audit's refusal.
    if not disclosure.at_most_half(size + reserves, min(pool.low, pool.published)):
        raise JobRefused(disclosure.sample_refused(min_cell))
    for j, cells in enumerate(gathered.categories):
        category = disclosure.fit_group(cells)
        label = Message(
            gettext_noop("%(quota)s: the quota category within the eligible pool: "),
            {"quota": quota_label(j, raw[j])},
        )
        disclosure.check_group(category, min_cell, label=label)
        if category.exact and pool.exact:
            # On exact answers the rest of the pool is a cell too: selection
            # probabilities would single it out (issue 26, attack 5).
            rest = disclosure.GroupSize.counted(pool.estimate - category.estimate)
            if rest.estimate > 0:
                disclosure.check_group(rest, min_cell, label=label)
    exact_quotas = any(
        disclosure.is_exact(request, [c.attribute for c in where]) for where, _, _ in parsed
    )
    withheld = pool.exact and small_crossing(gathered.loaded, parsed, min_cell)
    quotas = [
        Quota(tuple(where), low, high, quota_label(j, raw[j]))
        for j, (where, low, high) in enumerate(parsed)
    ]
    loaded = gathered.loaded

    def solving(fraction: float) -> None:
        gathered.progress(0.25 + 0.65 * fraction)

    try:
        result: PanelResult = select_panel(
            loaded.table,
            size,
            quotas,
            loaded.where,
            reserves=reserves,
            objective=params.objective,  # type: ignore[arg-type]
            rng=np.random.default_rng(seed),
            progress=solving,
            max_outside=params.max_outside,
            max_seconds=solver_seconds(),
            max_types=cost.panel_max_types(request),
        )
    except TooManyTypes as exc:
        # The quotas split the candidates finer than the budget's solver time allows,
        # known only now (the types come from the posteriors): refused before any MILP.
        raise JobRefused(
            cost.panel_refusal(request, cost.panel_cost(request, exc.types), exc.types)
        ) from None
    except InfeasibleQuotas as exc:
        # Feasibility needs the posteriors, i.e. the fit, which never runs in the request
        # (POST only validates, issue 9), so the worker refuses: the reason names the
        # conflicting quotas and the smallest relaxation, in panel seats (bounds the
        # analyst wrote or seats of a panel), never a count of the pool. On exact
        # answers the relaxation step is a count of the pool (issue 26, attack 6):
        # only the conflicting quotas are named.
        if exact_quotas:
            names = ", ".join(quota_label(j, raw[j]) for j in exc.conflicting)
            raise JobRefused(
                Message(
                    gettext_noop(
                        "no panel of this size meets the quotas; these quotas conflict: "
                        "%(names)s. Widen them or ask for a smaller panel (on answers "
                        "collected without distortion the smallest relaxation is not stated: "
                        "it would tell a count of the pool)"
                    ),
                    {"names": names or "-"},
                )
            ) from None
        raise JobRefused(exc.message) from None
    except ValueError as exc:
        if "larger than the eligible pool" not in str(exc):
            raise
        # The engine's message states the pool; say it without the number.
        raise JobInputError(
            Message(
                gettext_noop(
                    "a panel of %(size)s with %(reserves)s reserves is larger than the eligible "
                    "pool (candidates whose answers make them more likely than not to meet "
                    "'where')"
                ),
                {"size": size, "reserves": reserves},
            )
        ) from None
    gathered.progress(0.9)
    return Fitted(request, seed, pool, result, loaded, exact_quotas, withheld)


def small_crossing(
    loaded: analysis.PreparedAnalysis,
    parsed: Sequence[tuple[list[queries.Condition], int, int]],
    min_cell: int,
) -> bool:
    """Whether quotas on exact answers cross in a group below the threshold.

    Selection probabilities follow a candidate's type, the quota categories it falls
    in: with two or more quotas on exact answers, each crossing (in this category and
    that one, in this one only, in none, ...) is a cell of the eligible pool, judged like
    a count on its true size (issue 26, attack 5 on several quotas; each category and
    the rest of the pool alone are judged in :func:`fit`). An empty crossing names
    nobody. When one is small the panel is drawn, but probabilities.csv shows no
    candidate's probability: one blank among figures would single it out as well.
    """
    exact = [
        where
        for where, _low, _high in parsed
        if disclosure.is_exact(loaded.request, [c.attribute for c in where])
    ]
    if len(exact) < 2:
        return False
    values = {
        key: attribute.codes
        if isinstance(attribute, queries.DiscreteAttribute)
        else attribute.values
        for key, attribute in loaded.table.items()
    }
    size = len(loaded.participants)
    eligible = queries.satisfies(values, loaded.where) if loaded.where else np.ones(size, bool)
    membership = np.stack([queries.satisfies(values, where) for where in exact], axis=1)
    _patterns, counts = np.unique(membership[eligible], axis=0, return_counts=True)
    return not all(disclosure.publishable((float(c), float(c)), min_cell) for c in counts)


def withheld_note(threshold: int) -> Message:
    return Message(
        gettext_noop(
            "probabilities.csv shows no selection probabilities: quotas on answers collected "
            "without distortion cross in a group smaller than the threshold of %(threshold)s "
            "(in some of their categories and not in the others), and a candidate's "
            "probability would tell their group"
        ),
        {"threshold": threshold},
    )


def publish(fitted: Fitted) -> dict[str, Any]:
    """The members' and reserves' references, the quotas' outcomes and the attachment."""
    result, loaded, raw = fitted.result, fitted.loaded, _params(fitted.request).quotas
    participants = _references(loaded, result.rows)
    reserve_refs = _references(loaded, result.reserves)
    listed = result.candidates
    if fitted.pool.perturbed or fitted.exact_quotas:
        # On an exact eligibility every candidate is a member of the pool: the attachment
        # would list a whole pool; on exact quotas each probability would tell the
        # candidate's answer (issue 26). It lists the members and reserves only.
        listed = np.concatenate([result.rows, result.reserves]).astype(np.int64)
    candidates = _references(loaded, listed)
    probabilities = result.probabilities[listed]
    if fitted.withheld:
        probabilities = np.full(listed.size, np.nan)
    attachment = probabilities_csv(candidates, probabilities, set(participants), reserve_refs)
    return {
        "participants": participants,
        "reserves": reserve_refs,
        "seed": fitted.seed,
        "objective": result.objective,
        "quotas": [
            {
                "where": [c.as_json() for c in raw[j].where],
                "label": quota_label(j, raw[j]),
                "min": outcome.min,
                "max": outcome.max,
                "expected": float(outcome.expected),
                "ci95": interval_json(outcome.ci95),
                # Expected seats of the realised true count outside the band (normal
                # approximation; null when not computed).
                "expected_outside": finite_or_none(outcome.expected_outside),
                # With max_outside: the bound every panel of the lottery keeps for this
                # quota (null: the plain band only).
                "outside_level": finite_or_none(outcome.outside_level),
            }
            for j, outcome in enumerate(result.quotas)
        ],
        "selection_probability": result.selection_summary,
        "candidates": round(fitted.pool.published)
        if fitted.pool.perturbed
        else int(result.candidates.size),
        # The eligible pool's size and the interval it was judged on (the query audit
        # uses them); an exact pool's as published (cell-key perturbation, issue 26).
        **(
            {
                "expected_eligible": fitted.pool.published,
                "eligible_ci95": interval_json(fitted.pool.published_ci95),
                "perturbed": True,
            }
            if fitted.pool.perturbed
            else {
                "expected_eligible": float(result.expected_eligible),
                "eligible_ci95": interval_json(fitted.pool.ci95),
            }
        ),
        "lottery_size": int(result.lottery_size),
        "lottery_draw": int(result.lottery_draw),
        # Template + parameters (read in the reader's language: core.messages).
        "guarantee": note_json(result.guarantee),
        "method": f"{result.objective} (Flanigan et al. 2021, on posteriors)",
        "notes": [
            *map(note_json, result.notes),
            privacy_caveat().as_json(),
            *(
                [withheld_note(fitted.request.thresholds.min_cell).as_json()]
                if fitted.withheld
                else []
            ),
        ],
        "probabilities_url": None,  # set by the service once the job's id is known
        base.ATTACHMENT_KEY: attachment,
    }


def published(
    params: Request, payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """The eligible pool on its interval; a panel stored before it published one counts
    its listed candidates (exactly the group on undistorted answers)."""
    box = Box.of(base.audit_conditions(params.where, questions))
    if payload.get("eligible_ci95") is not None and payload.get("expected_eligible") is not None:
        return [base.sized(box, payload["expected_eligible"], payload["eligible_ci95"])]
    if payload.get("candidates") is not None:
        return [Published.exact(box, float(payload["candidates"]))]
    return []


def finite_or_none(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def solver_seconds() -> float:
    """How long the solver may improve the lottery: three quarters of the soft time limit
    of the lane panels run in (``CELERY_PANELS_SOFT_TIME_LIMIT``, by default the worker's
    ``CELERY_TASK_SOFT_TIME_LIMIT``), so a long panel ends with a valid (if not optimal)
    lottery and its proven bound in the notes instead of failing at the limit."""
    lanes = getattr(settings, "CELERY_LANES", {})
    limit = lanes.get("panels", {}).get("soft_time_limit", settings.CELERY_TASK_SOFT_TIME_LIMIT)
    return max(10.0, 0.75 * float(limit))


def privacy_caveat() -> Message:
    """The panel's caveat, stored as its template (shown in the reader's language)."""
    return Message(
        gettext_noop(
            "Answers were distorted on residents' devices: nobody's true category is known, so "
            "quotas hold for expected true counts only, within the 95%% intervals shown."
        )
    )


KIND = base.AnalysisKind(
    name=NAME,
    label=gettext_noop("select a panel"),
    summary="a panel drawn by a fair lottery over quota-satisfying panels (maximin, nash "
    "or leximin of Flanigan et al. 2021 on the posteriors of the distorted answers); "
    "bounds no panel of any pool can meet are a 400, quotas that these candidates' "
    "posteriors cannot meet end the job `refused` (feasibility needs the fit, which "
    "the request does not run), the reason naming the conflicting quotas and the "
    "smallest feasible relaxation",
    methods=(),
    default_method=None,
    parse=parse,
    gather=gather,
    fit=fit,
    publish=publish,
    published=published,
    cost=cost.check_cost,
    sampling=True,
    request_fields=("quotas", "reserves", "objective", "max_outside"),
    group_threshold="min_cell",
    validate=validate_panel,
    admit=admit_panel,
    interval=False,
    attachment=True,
    admin_form=False,
)
