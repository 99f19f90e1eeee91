"""``kind: "sample"``: participants drawn for a deliberative panel (001, Section IV-B).

Methods: ``posterior`` (default; each participant's posterior probability of meeting the
condition from one fit of the condition's cell table, the best drawn with seeded
tie-breaks, streamed in bounded memory) and ``figure3`` (001, Figure 3's assignment of
values to every participant). The pool and every stratum are groups judged against the
cell threshold on their size's interval.

The stages: ``gather`` reads the cell tables of the pool, every stratum and every
subcondition in one scan (and, for ``figure3``, every participant's answers); ``fit``
judges the groups and fits the posteriors (or runs Figure 3); ``publish`` streams the
participants once, keeping each quota's best candidates, and shapes the result. The
stream needs the posteriors, so for ``posterior`` the participants' references and the
candidates are read after the fit (bounded: the quotas plus one chunk).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction import analysis, cost, disclosure
from reconstruction.algorithms import queries
from reconstruction.algorithms.audit import Published
from reconstruction.analysis import AnalysisInputError, AnalysisRequest, interval_json
from reconstruction.jobs import JobRefused
from reconstruction.kinds import base
from surveys import statistics

NAME = "sample"
METHODS = ("posterior", "figure3")
DEFAULT_METHOD = "posterior"


@dataclass(frozen=True)
class Request(base.KindRequest):
    """A sample: its size, seed (``None``: unseeded), conditions, strata and method."""

    size: int = 0
    seed: int | None = None


def parse(spec: Mapping[str, Any]) -> Request:
    seed = spec.get("seed")
    return Request(
        **base.common_fields(spec, DEFAULT_METHOD),
        size=int(spec.get("size") or 0),
        seed=None if seed is None else int(seed),
    )


def validate(request: AnalysisRequest) -> None:
    size = request.params.size  # type: ignore[attr-defined]
    if not disclosure.at_most_half(size, request.participants):
        raise AnalysisInputError({"size": disclosure.sample_refused(request.thresholds.min_cell)})


def _too_large(request: AnalysisRequest) -> Message:
    """The one refusal of a sample too large for its pool or a stratum (issue 26: the
    same words as the query audit's refusal of a sample, and no pool size)."""
    return disclosure.sample_refused(request.thresholds.min_cell)


def _pool_interval(size: disclosure.GroupSize | None) -> dict[str, Any]:
    """The pool's size interval it was judged on (``pool_ci95``; none without 'where');
    an exact pool's estimate and interval as published (cell-key perturbation)."""
    if size is None:
        return {}
    if size.perturbed:
        return {
            "pool_estimate": size.published,
            "pool_ci95": interval_json(size.published_ci95),
            "perturbed": True,
        }
    return {"pool_ci95": interval_json(size.ci95)}


def _advanced(generator: np.random.Generator, steps: int) -> np.random.Generator:
    """A generator that continues ``generator`` as if ``steps`` uniform draws had been
    taken from it (PCG64 and its kin draw one 64-bit word per double)."""
    bit = copy.deepcopy(generator.bit_generator)
    bit.advance(int(steps))  # type: ignore[attr-defined]
    return np.random.Generator(bit)


class _Pass:
    """One quota's pass over the participant stream: its best candidates so far.

    The pass keeps ``quota + before`` candidates (``before``: the quotas of the passes
    ahead of it), so that once those passes have chosen, dropping their participants
    still leaves its ``quota`` best among the rest: the passes share one scan.
    """

    def __init__(
        self,
        plan: queries.CellPlan | None,
        scores: Any,
        quota: int,
        before: int,
        width: int,
    ) -> None:
        self.plan, self.scores, self.quota = plan, scores, quota
        self.best = queries.TopCandidates(quota + before, width=width)
        self.generator: np.random.Generator | None = None
        self.window = np.zeros(0)  # the draws of positions start .. start + window.size
        self.start = 0

    def keys_at(self, total: int, positions: Any) -> Any:
        """The tie-break keys of the given stream positions (ascending, never below a
        position asked before): position ``p`` gets the ``p``-th uniform draw of the
        pass, drawn in chunks, so the keys do not depend on how the candidates come."""
        assert self.generator is not None
        keys = np.empty(positions.size)
        done = 0
        while done < positions.size:
            end = self.start + self.window.size
            stop = done + int(np.count_nonzero(positions[done:] < end))
            keys[done:stop] = self.window[positions[done:stop] - self.start]
            done = stop
            if done < positions.size:
                if end >= total:
                    raise RuntimeError("a candidate's position lies past the stream")
                self.start = end
                self.window = self.generator.random(min(statistics.CHUNK, total - end))
        return keys

    def offer(
        self,
        request: AnalysisRequest,
        keys: list[str],
        total: int,
        positions: Any,
        ids: Any,
        block: dict[int, Any],
    ) -> None:
        """Offer candidates (in stream order) with the keys drawn at their positions."""
        picked = self.keys_at(total, positions)
        columns = {key: block[request.questions[key].pk] for key in keys}
        if self.plan is None:
            score = np.ones(ids.size)
        else:
            score = self.scores[queries.flat_cells(self.plan, columns)]
        rows = np.column_stack([columns[key] for key in keys]) if keys else None
        self.best.offer(ids, score, picked, rows)

    def choose(self, taken: Any) -> tuple[Any, Any, Any]:
        """The ``quota`` best candidates not ``taken``: ids, rows and scores."""
        free = ~np.isin(self.best.ids, taken)
        return (
            self.best.ids[free][: self.quota],
            self.best.rows[free][: self.quota],
            self.best.scores[free][: self.quota],
        )


# --------------------------------------------------------------------------- worker


def _label(conds: list[Any]) -> tuple[str, ...]:
    return tuple(queries.condition_label(c) for c in conds)


@dataclass(frozen=True)
class Gathered:
    request: AnalysisRequest
    quotas: list[tuple[list[Any], int]]
    read: dict[tuple[str, ...], tuple[queries.CellPlan, queries.CellTable]]
    pool: disclosure.GroupCells | None
    strata: list[disclosure.GroupCells]
    loaded: analysis.PreparedAnalysis | None = None


@dataclass(frozen=True)
class Fitted:
    request: AnalysisRequest
    quotas: list[tuple[list[Any], int]]
    read: dict[tuple[str, ...], tuple[queries.CellPlan, queries.CellTable]]
    pool_size: disclosure.GroupSize | None
    fitted: dict[tuple[str, ...], tuple[queries.CellPlan | None, Any, float]]
    drawn: Any = None
    loaded: analysis.PreparedAnalysis | None = None


def _axes_of(request: AnalysisRequest, plan: queries.CellPlan) -> list[statistics.Axis]:
    return [
        statistics.Axis(
            request.questions[name],
            None if edges is None else statistics.finite_edges(edges),
        )
        for name, edges in zip(plan.names, plan.reported_edges, strict=True)
    ]


def _specs(request: AnalysisRequest) -> dict[str, queries.Spec]:
    return {key: analysis.question_spec(request.questions[key]) for key in request.keys}


def gather(request: AnalysisRequest, progress: base.Progress) -> Gathered:
    """The cell tables every condition needs, in one scan (posterior), or every
    participant's answers (figure3), and the pool's and strata's group cells."""
    quotas = _quotas(request)
    groups = [[*request.where, *stratum] for stratum, _quota in request.strata]
    if request.method != "posterior":
        request = base.start(request, progress).request
        pool = disclosure.read_group(request) if request.where else None
        strata = [disclosure.read_group(request, conds) for conds in groups]
        return Gathered(request, quotas, {}, pool, strata, analysis.load(request))
    specs = _specs(request)
    # Each condition's cells are read and fitted once, whoever asks (the group checks,
    # the pool, the quotas, the subconditions' precisions): all of them in one scan.
    needed: dict[tuple[str, ...], list[Any]] = {}
    for conds in [list(request.where), *(conds for conds, _quota in quotas)]:
        if conds:
            needed.setdefault(_label(conds), conds)
            for cond in conds:
                needed.setdefault(_label([cond]), [cond])
    # The same scan counts the participants (every table counts everyone who answered
    # every attribute): planned for the tallies' upper bound on n, and read again only
    # if the exact count plans other cells (as analysis.counted_with_cells).
    read = _read_tables(request, specs, needed, analysis.participant_bound(request))
    if read is None:
        request = base.start(request, progress).request
        read = _read_tables(request, specs, needed, request.participants, strict=True)
    else:
        n = next(iter(read.values()))[1].n if read else None
        request = base.start(request, progress, participants=n).request
        if read and any(
            not _same_plan(plan, queries.plan_cells(specs, needed[key], n=request.participants))
            for key, (plan, _table) in read.items()
        ):
            read = _read_tables(request, specs, needed, request.participants, strict=True)
    assert read is not None
    n = request.participants

    def counted(conds: list[Any]) -> tuple[queries.CellPlan, queries.CellTable]:
        key = _label(conds)
        if key not in read:
            plan = queries.plan_cells(specs, conds, n=n)
            read[key] = (plan, queries.CellTable(analysis.cells(request, plan).counts))
        return read[key]

    pool = disclosure.read_group(request, counted=counted) if request.where else None
    strata = [disclosure.read_group(request, conds, counted=counted) for conds in groups]
    return Gathered(request, quotas, read, pool, strata)


def _quotas(request: AnalysisRequest) -> list[tuple[list[Any], int]]:
    return (
        [([*request.where, *stratum], quota) for stratum, quota in request.strata]
        if request.strata
        else [(list(request.where), request.params.size)]  # type: ignore[attr-defined]
    )


def _read_tables(
    request: AnalysisRequest,
    specs: dict[str, queries.Spec],
    needed: dict[tuple[str, ...], list[Any]],
    n: int,
    *,
    strict: bool = False,
) -> dict[tuple[str, ...], tuple[queries.CellPlan, queries.CellTable]] | None:
    """The cell tables of ``needed`` planned for ``n``, in one scan; ``None`` when they
    cannot be planned for that ``n`` (nothing read), unless ``strict`` (the exact count:
    the planner's error is the job's)."""
    if n < 1 and not strict:
        return None
    try:
        plans = {key: queries.plan_cells(specs, conds, n=n) for key, conds in needed.items()}
    except ValueError:
        if strict:
            raise
        return None
    if not plans:
        return {}
    counts = statistics.cell_counts_many(
        request.survey,
        [_axes_of(request, plan) for plan in plans.values()],
        require=[request.questions[key] for key in request.keys],
        using=statistics.analysis_alias(),
    )
    return {
        key: (plan, queries.CellTable(table))
        for (key, plan), table in zip(plans.items(), counts, strict=True)
    }


def _same_plan(a: queries.CellPlan, b: queries.CellPlan) -> bool:
    return a.names == b.names and all(
        (x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
        for x, y in zip(a.reported_edges, b.reported_edges, strict=True)
    )


def _check_groups(gathered: Gathered) -> disclosure.GroupSize | None:
    """The pool and every stratum are groups like any other (issue 13, finding 2; issue
    10, item 4): each size's 95% interval passes the count threshold (the threshold
    point, reconstruction/disclosure.py), and the refusal never states it."""
    request = gathered.request
    min_cell = request.thresholds.min_cell
    pool_size = None
    if gathered.pool is not None:
        pool_size = disclosure.fit_group(gathered.pool)
        disclosure.check_group(pool_size, min_cell)
    # Never a whole pool (issue 26): at most half of the pool and of every stratum,
    # judged on the estimate as published (perturbed when exact).
    size = request.params.size  # type: ignore[attr-defined]
    pool = request.participants if pool_size is None else pool_size.published
    if not disclosure.at_most_half(size, pool):
        raise JobRefused(_too_large(request))
    for i, cells in enumerate(gathered.strata):
        stratum = disclosure.fit_group(cells)
        disclosure.check_group(stratum, min_cell, label=f"strata[{i}]: ")
        if not disclosure.at_most_half(request.strata[i][1], stratum.published):
            raise JobRefused(_too_large(request))
    return pool_size


def fit(gathered: Gathered) -> Fitted:
    """Judge the pool and strata, then the posteriors (or Figure 3's draw)."""
    request = gathered.request
    pool_size = _check_groups(gathered)
    if gathered.loaded is not None:
        return Fitted(
            request, gathered.quotas, gathered.read, pool_size, {},
            drawn=_figure3(request, gathered.loaded), loaded=gathered.loaded,
        )  # fmt: skip
    fitted: dict[tuple[str, ...], tuple[queries.CellPlan | None, Any, float]] = {}
    for conds in [list(request.where), *(conds for conds, _quota in gathered.quotas)]:
        for part in [conds, *([c] for c in conds)] if conds else []:
            key = _label(part)
            if key not in fitted:
                plan, table = gathered.read[key]
                scores, estimate = queries.posterior_from_table(plan, table)
                fitted[key] = (plan, scores.ravel(), estimate)
    return Fitted(request, gathered.quotas, gathered.read, pool_size, fitted)


def _figure3(request: AnalysisRequest, loaded: analysis.PreparedAnalysis) -> Any:
    size = request.params.size  # type: ignore[attr-defined]
    try:
        return queries.sample(
            loaded.table,
            size,
            loaded.where,
            strata=loaded.strata,
            method="figure3",
            rng=np.random.default_rng(request.params.seed),  # type: ignore[attr-defined]
        )
    except ValueError as exc:
        if "larger than the pool" not in str(exc):
            raise
        raise JobRefused(_too_large(request)) from None


def publish(fitted: Fitted) -> dict[str, Any]:
    if fitted.loaded is not None:
        return _publish_figure3(fitted)
    return _publish_posterior(fitted)


def _publish_figure3(fitted: Fitted) -> dict[str, Any]:
    """Figure 3's sample assigns values to every participant: it read them all."""
    request, drawn, loaded = fitted.request, fitted.drawn, fitted.loaded
    assert loaded is not None
    participants = analysis.references(loaded, drawn.rows)
    return {
        "participants": participants,
        "strata": [analysis.references(loaded, rows) for rows in drawn.strata_rows]
        if request.strata
        else [],
        "pool_estimate": float(drawn.pool_estimate),
        **_pool_interval(fitted.pool_size),
        "expected_precision": float(drawn.expected_precision),
        "subcondition_precision": {label: value for label, value in drawn.subcondition_precision},
        "seed": request.params.seed,  # type: ignore[attr-defined]
        "method": drawn.method,
    }


def _publish_posterior(fitted: Fitted) -> dict[str, Any]:
    """The posterior draw of :func:`~reconstruction.algorithms.queries.sample`, streamed.

    Each condition's posterior comes from one fit of its cell table (:func:`fit`). The
    participants are read once, in chunks, and every quota keeps only its best
    candidates (:class:`~reconstruction.algorithms.queries.TopCandidates`): memory is the
    quotas plus one chunk, whatever the number of participants. The quotas are filled in
    order, each without the participants the earlier ones chose; each quota's random
    tie-break keys are one seeded uniform draw per participant in stream order, the
    quotas' draws following each other, so a seed reproduces the panel.
    """
    request = fitted.request
    seed = request.params.seed  # type: ignore[attr-defined]
    n = request.participants
    generator = np.random.default_rng(seed)
    keys = request.keys
    questions = [request.questions[key] for key in keys]
    using = statistics.analysis_alias()

    def posterior(conds: list[Any]) -> tuple[queries.CellPlan | None, Any, float]:
        if not conds:
            return None, None, float(n)
        return fitted.fitted[_label(conds)]

    pool_estimate = posterior(list(request.where))[2] if request.where else float(n)
    fits = [posterior(conds) for conds, _quota in fitted.quotas]
    passes: list[_Pass] = []
    scans: list[tuple[list[statistics.Axis], list[int] | None]] = []
    before = 0
    for (conds, quota), (plan, scores, estimate) in zip(fitted.quotas, fits, strict=True):
        if quota > min(round(estimate), n - before):
            raise JobRefused(_too_large(request))
        # Only the best cells' participants can be chosen: enough of them to fill the
        # quota even if every one the earlier quotas take is among them. The rest never
        # leave the database; every participant keeps their stream position, so each
        # candidate gets the same tie-break key as when all were streamed.
        axes: list[statistics.Axis] = []
        wanted = None
        if plan is not None:
            cell_counts = fitted.read[_label(conds)][1].counts.ravel()
            order = np.argsort(-scores, kind="stable")
            reach = int(np.searchsorted(np.cumsum(cell_counts[order]), quota + before))
            if reach < order.size:
                wanted = np.flatnonzero(scores >= scores[order[reach]]).tolist()
                axes = _axes_of(request, plan)
        passes.append(_Pass(plan, scores, quota, before, len(keys)))
        scans.append((axes, wanted))
        before += quota
    total = n
    for streamed, positions, ids, block, hits in statistics.iter_candidates_many(
        request.survey, questions, scans, using=using
    ):
        if passes[0].generator is None:
            # Quota j's keys are the draws after the j earlier passes' ``total`` each.
            total = streamed
            for j, one in enumerate(passes):
                one.generator = _advanced(generator, j * total)
        for j, one in enumerate(passes):
            mine = hits[:, j]
            if mine.any():
                one.offer(
                    request,
                    keys,
                    total,
                    positions[mine],
                    ids[mine],
                    {pk: column[mine] for pk, column in block.items()},
                )
    taken = np.zeros(0, dtype=np.int64)
    chosen: list[Any] = []
    precision: list[Any] = []
    for one in passes:
        ids, rows, scores = one.choose(taken)
        if ids.size < one.quota:
            raise JobRefused(_too_large(request))
        taken = np.concatenate([taken, ids])
        order = np.argsort(ids)
        chosen.append((ids[order], rows[order]))
        precision.append(scores)
    # Per subcondition: the posterior of the chosen under that subcondition alone.
    per_condition: dict[str, list[Any]] = {}
    for (conds, _size), (_ids, rows) in zip(fitted.quotas, chosen, strict=True):
        for cond in conds:
            plan, scores, _estimate = posterior([cond])
            assert plan is not None
            columns = {key: rows[:, keys.index(key)] for key in plan.names}
            per_condition.setdefault(queries.condition_label(cond), []).append(
                scores[queries.flat_cells(plan, columns)]
            )
    everyone = np.sort(np.concatenate([ids for ids, _ in chosen]))
    return {
        "participants": statistics.participant_references(everyone.tolist(), using=using),
        "strata": [
            statistics.participant_references(ids.tolist(), using=using) for ids, _ in chosen
        ]
        if request.strata
        else [],
        "pool_estimate": float(pool_estimate),
        **_pool_interval(fitted.pool_size),
        "expected_precision": float(np.concatenate(precision).mean()),
        "subcondition_precision": {
            label: float(np.concatenate(parts).mean()) for label, parts in per_condition.items()
        },
        "seed": seed,
        "method": "posterior",
    }


def published(
    params: Request, payload: Mapping[str, Any], questions: Mapping[str, Any]
) -> list[Published]:
    """The pool's estimated size on its interval."""
    return base.group_published(
        params, questions, payload.get("pool_estimate"), payload.get("pool_ci95")
    )


KIND = base.AnalysisKind(
    name=NAME,
    label=gettext_noop("draw a sample"),
    summary="participants drawn for a deliberative panel (001, Section IV-B)",
    methods=METHODS,
    default_method=DEFAULT_METHOD,
    parse=parse,
    gather=gather,
    fit=fit,
    publish=publish,
    published=published,
    cost=cost.check_cost,
    sampling=True,
    group_threshold="min_cell",
    validate=validate,
    interval=False,
    streams=True,
)
