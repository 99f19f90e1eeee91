"""The analysis kinds: one registry entry each (count, mean, distribution, sample).

Every place that needs to know about a kind reads its entry here: the request
serializer (kinds, method names, which fields a kind takes), the API's OpenAPI text, the
service that validates a request and the worker that computes it. There is no other
list of methods and no ``if kind == ...`` chain.

Adding a kind (e.g. ``panel``) is one :func:`register` call with an
:class:`AnalysisKind`; nothing else changes (``AnalysisJob.kind`` is checked against
this registry, not a list in the database, so no migration is needed).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message, note_json
from reconstruction import analysis, disclosure
from reconstruction.algorithms import queries, tables
from reconstruction.algorithms.methods import DISCRETE_METHODS
from reconstruction.analysis import (
    AnalysisInputError,
    AnalysisRequest,
    interval_json,
)
from reconstruction.cost import check_cost
from reconstruction.jobs import JobRefused
from surveys import statistics

Progress = Callable[[float], None]


def _no_check(request: AnalysisRequest) -> None:
    del request


@dataclass(frozen=True)
class AnalysisKind:
    """One analysis kind: what it accepts, how it is checked, computed and published.

    The contract of an entry:

    ``name``
        The ``kind`` of api.md's request (also the model's ``AnalysisJob.kind``).
    ``summary``
        One sentence for the API documentation.
    ``methods`` / ``default_method``
        Every method name the kind accepts and the one used when the request names
        none. ``methods_for(request)`` narrows them for a particular request (e.g. a
        distribution of a discrete vs. a continuous question); default: ``methods``.
    ``attribute``
        ``"required"``: the request names the question analysed (``attribute``);
        ``"forbidden"``: it must not.
    ``needs_where``
        The request needs at least one condition.
    ``sampling``
        The kind takes ``size`` and ``seed`` (no other kind may), and ``strata`` unless
        ``request_fields`` says otherwise.
    ``request_fields``
        Further request fields only this kind takes (the panel's ``quotas``,
        ``reserves`` and ``objective``; see :mod:`reconstruction.panels`).
    ``group_threshold``
        The disclosure threshold a condition's estimated group must reach:
        ``"min_cell"`` (option-level) or ``"min_responses"`` (question-level),
        002_f0fd5869fe299975.txt; ``compute`` enforces it on its fit.
    ``validate(request)``
        Request-time checks that need the schema only (question types, whether a method
        fits a channel): raise :class:`~reconstruction.analysis.AnalysisInputError`. It
        must not read answers.
        ``request.participants`` holds the number of participants who answered every
        attribute, e.g. to refuse a sample larger than them: in the web request an
        upper bound from the response tallies, in the worker the exact count.
    ``compute(request, progress)``
        Runs in the worker: reads the statistics it needs (SQL, see
        :mod:`surveys.statistics`; only sampling reads participants, in bounded
        memory), fits **once** and returns api.md's result JSON with disclosure control
        applied. What needs the fit to be decided (a group below the threshold, a
        sample larger than its pool) raises :class:`~reconstruction.jobs.JobRefused`
        with a reason naming the threshold, never a below-threshold number. Call
        ``progress`` with fractions in ``[0, 1]``.
    """

    name: str
    summary: str
    methods: tuple[str, ...]
    default_method: str | None
    compute: Callable[[AnalysisRequest, Progress], dict[str, Any]]
    attribute: Literal["required", "forbidden"] = "forbidden"
    needs_where: bool = False
    sampling: bool = False
    request_fields: tuple[str, ...] = ()
    group_threshold: Literal["min_cell", "min_responses"] = "min_responses"
    methods_for: Callable[[AnalysisRequest], tuple[str, ...]] | None = None
    validate: Callable[[AnalysisRequest], None] = _no_check

    def allowed_methods(self, request: AnalysisRequest) -> tuple[str, ...]:
        return self.methods if self.methods_for is None else self.methods_for(request)

    def threshold(self, request: AnalysisRequest) -> int:
        return int(getattr(request.thresholds, self.group_threshold))


KINDS: dict[str, AnalysisKind] = {}


def register(kind: AnalysisKind) -> AnalysisKind:
    """Add (or replace) a kind; returns it so it can be used as a value."""
    KINDS[kind.name] = kind
    return kind


def get(name: str) -> AnalysisKind:
    try:
        return KINDS[name]
    except KeyError:
        raise AnalysisInputError(
            {
                "kind": Message(
                    gettext_noop("unknown kind %(kind)s; choose one of %(choices)s"),
                    {"kind": repr(name), "choices": ", ".join(KINDS)},
                )
            }
        ) from None


def kind_choices() -> list[str]:
    """The registered kind names (the OpenAPI ``AnalysisKindEnum``, read when used)."""
    return list(KINDS)


def all_methods() -> tuple[str, ...]:
    """Every method name of every kind, each once (the serializer's choices)."""
    return tuple(dict.fromkeys(m for kind in KINDS.values() for m in kind.methods))


def methods_description() -> str:
    """The methods of each kind for the API documentation."""
    parts = []
    for kind in KINDS.values():
        names = ", ".join(
            f"`{m}`" + (" (default)" if m == kind.default_method else "") for m in kind.methods
        )
        parts.append(f"{kind.name}: {names}")
    return "; ".join(parts) + "."


# --------------------------------------------------------------------------- request path


def validate_request(
    survey: Any, spec: Mapping[str, Any], *, count: bool = True
) -> AnalysisRequest:
    """What the web request decides: the schema and the response tallies, no fit.

    Raises :class:`AnalysisInputError` (HTTP 400) for a request that does not fit the
    survey's questions, a method that does not fit the kind or the channel, and (with
    ``count``) fewer participants than the question-level threshold, judged on
    :func:`~reconstruction.analysis.participant_bound` (a few rows of
    :mod:`surveys.tallies`, whatever the number of participants). The worker passes
    ``count=False`` and counts exactly in :func:`compute`.
    """
    kind = get(spec["kind"])
    request = analysis.resolve(survey, spec)
    method = request.method
    if method is not None:
        allowed = kind.allowed_methods(request)
        if method not in allowed:
            raise AnalysisInputError(
                {
                    "method": Message(
                        gettext_noop(
                            "%(method)s does not apply to this %(kind)s; choose one of %(choices)s"
                        ),
                        {"method": repr(method), "kind": kind.name, "choices": ", ".join(allowed)},
                    )
                }
            )
    if kind.needs_where and not request.where:
        raise AnalysisInputError(
            {
                "where": Message(
                    gettext_noop("a %(kind)s needs at least one condition"), {"kind": kind.name}
                )
            }
        )
    if not count:
        return request
    # Constant time in n: the response tallies bound the count from above; the worker
    # counts exactly (and refuses the job if the exact count falls short).
    n = analysis.participant_bound(request)
    check_cost(replace(request, participants=n))  # before any answer is read (issue 13)
    reason = analysis.too_few_responses(request, n)
    if reason is not None:
        raise AnalysisInputError({"survey": reason})
    request = replace(request, participants=n)
    kind.validate(request)
    return request


def compute(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    """The worker's part: count again (data change), then the kind's one fit."""
    kind = get(request.kind)
    request = _whole_numbers(request)
    if request.kind == "count" and (request.method or "joint") == "joint":
        n = analysis.counted_with_cells(request, None)  # the count's own cells, once
    elif request.kind == "mean" and (request.method or "unbiased") == "unbiased":
        n = analysis.counted_with_cells(request, request.attribute)
    else:
        n = analysis.participant_count(request)
    reason = analysis.too_few_responses(request, n)
    if reason is not None:
        raise JobRefused(reason)
    request = replace(request, participants=n)
    try:
        kind.validate(request)
    except AnalysisInputError as exc:
        raise JobRefused(exc.message) from None  # template + parameters
    progress(0.1)
    return kind.compute(request, progress)


def _whole_numbers(request: AnalysisRequest) -> AnalysisRequest:
    """Test for whole-number truths where the array API does (issue 10): the continuous
    attributes of a joint count's condition, and of a conditional mean's or a grouped
    distribution's condition and target, that declare no step
    (:func:`~reconstruction.analysis.detect_whole_numbers`, one ``GROUP BY`` each). A
    joint count whose evidence is inconclusive averages both models, as ``count_joint``
    does (:func:`~reconstruction.analysis.count_models`). The overall distribution of a
    continuous question is tested in
    :func:`~reconstruction.analysis.overall_distribution`."""
    keys, average = analysis.whole_number_tests(request)
    if not keys or (request.kind == "distribution" and not request.where):
        return request  # an overall distribution tests its question itself
    return analysis.detect_whole_numbers(request, keys, average=average)


def _check_group(request: AnalysisRequest, needed: int) -> disclosure.GroupSize:
    """Judge the request's group on its size's interval (the threshold point)."""
    size = disclosure.group_size(request)
    disclosure.check_group(size, needed)
    return size


# --------------------------------------------------------------------------- count


def _count(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    min_cell = request.thresholds.min_cell
    method = request.method or "joint"
    if method == "joint" and request.lattice_weights:  # whole numbers or not: average
        result = analysis.count_models(request)
    elif method == "joint":
        plan = analysis.plan(request, request.participants)
        cells = analysis.cells(request, plan)
        progress(0.3)
        result = tables.count_from_table(plan, cells)
    elif method == "naive":  # one SQL COUNT of the reported answers meeting the condition
        result = queries.naive_count_result(analysis.naive_count(request), request.participants)
    else:  # Figure 3 assigns values to participants: it reads them (bounded columns)
        prepared = analysis.load(request)
        progress(0.3)
        result = queries.count(prepared.table, prepared.where, method="figure3")
    progress(0.9)
    exact = disclosure.is_exact(request, [c.attribute for c in request.where])
    if method == "joint" and not exact:
        # The count's own interval is its size's interval.
        size = disclosure.GroupSize(result.estimate, *result.ci95, exact=False)
        disclosure.check_group(size, min_cell)
    else:
        _check_group(request, min_cell)
    return {
        "estimate": float(result.estimate),
        "ci95": interval_json(result.ci95),
        "population": int(result.population),
        "suppressed": False,
        "method": result.method,
        "notes": [
            note_json(note)
            for note in (
                *analysis.whole_number_notes(request),
                *result.notes,
                *(analysis.whole_threshold_notes(request) if method != "naive" else ()),
            )
        ],
    }


register(
    AnalysisKind(
        name="count",
        summary="how many participants meet a conjunctive condition",
        methods=("joint", "figure3", "naive"),
        default_method="joint",
        needs_where=True,
        group_threshold="min_cell",
        compute=_count,
    )
)


# --------------------------------------------------------------------------- mean


def _validate_mean(request: AnalysisRequest) -> None:
    question = request.target
    assert question is not None
    if question.is_discrete:
        raise AnalysisInputError(
            {
                "attribute": Message(
                    gettext_noop(
                        "%(key)s is %(type)s: a mean needs a continuous question "
                        "(use a distribution)"
                    ),
                    {"key": repr(question.key), "type": question.type},
                )
            }
        )


def _marginal_of(
    request: AnalysisRequest, read: tuple[tables.CellPlan, tables.CellTable] | None
) -> Callable[[list[Any]], tuple[tables.CellPlan, tables.CellTable]]:
    """The group's cells for :func:`disclosure.group_size`: summed out of a table already
    read when its leading axes are the group's plan (the same participants, the same
    reported cells), else read from the database."""

    def counted(conds: list[Any]) -> tuple[tables.CellPlan, tables.CellTable]:
        sub = replace(request, where=conds)
        plan = analysis.plan(sub, request.participants)
        if read is not None:
            full, table = read
            d = len(plan.names)
            same = full.names[:d] == plan.names and all(
                (a is None and b is None)
                or (a is not None and b is not None and np.array_equal(a, b))
                for a, b in zip(full.reported_edges[:d], plan.reported_edges, strict=True)
            )
            if same:
                others = tuple(range(d, len(full.names)))
                return plan, tables.CellTable(table.counts.sum(axis=others))
        return plan, analysis.cells(sub, plan)

    return counted


def _mean(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    method = request.method or "unbiased"
    attribute = request.attribute
    assert attribute is not None
    read: tuple[tables.CellPlan, tables.CellTable] | None = None
    if method == "unbiased" or not request.where:  # without a condition: the overall mean
        plan = analysis.plan(request, request.participants, target=attribute)
        cells = analysis.cells(request, plan)
        read = (plan, cells)
        progress(0.3)
        result = tables.mean_from_table(plan, cells, plan.specs)
    elif method == "naive":  # one SQL aggregate: count, sum, sum of squares
        moments = analysis.naive_moments(request)
        spec = analysis.question_spec(request.questions[attribute])
        assert isinstance(spec, tables.ContinuousSpec)
        result = tables.naive_mean_from_moments(spec, moments.count, moments.total, moments.squares)
    else:  # Figure 3 assigns values to participants: it reads them (bounded columns)
        prepared = analysis.load(request)
        progress(0.3)
        result = queries.mean(prepared.table, attribute, prepared.where, method=method)  # type: ignore[arg-type]
    progress(0.9)
    size = disclosure.GroupSize.counted(request.participants)
    if request.where:
        size = disclosure.group_size(request, counted=_marginal_of(request, read))
        disclosure.check_group(size, request.thresholds.min_responses)
    return {
        "estimate": float(result.estimate),
        "ci95": interval_json(result.ci95),
        "group_size": float(result.group_size),
        "group_size_ci95": interval_json(size.ci95),
        "suppressed": False,
        "method": result.method,
        "notes": [
            note_json(note)
            for note in (
                *analysis.whole_number_notes(request),
                *result.notes,
                *(analysis.whole_threshold_notes(request) if method != "naive" else ()),
            )
        ],
    }


register(
    AnalysisKind(
        name="mean",
        summary="the mean of a continuous question, overall or within a group",
        methods=("unbiased", "figure3", "naive"),
        default_method="unbiased",
        attribute="required",
        validate=_validate_mean,
        compute=_mean,
    )
)


# --------------------------------------------------------------------------- distribution

CONTINUOUS_METHODS = ("em", "as")


def _distribution_methods(request: AnalysisRequest) -> tuple[str, ...]:
    question = request.target
    return DISCRETE_METHODS if question is not None and question.is_discrete else CONTINUOUS_METHODS


def _validate_distribution(request: AnalysisRequest) -> None:
    method = request.method
    if method is None:
        return
    if request.where:
        # Within a group the joint EM is the only estimator; a chosen method would be
        # silently ignored.
        raise AnalysisInputError(
            {
                "method": Message(
                    gettext_noop(
                        "%(method)s applies only to a distribution without conditions; within a "
                        "group the joint EM is used (leave out 'method')"
                    ),
                    {"method": repr(method)},
                )
            }
        )
    question = request.target
    if question is not None and question.is_discrete:
        analysis.check_method_fits(question, method)


def _distribution(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    attribute = request.attribute
    assert attribute is not None
    question = request.questions[attribute]
    if request.where:
        plan = analysis.plan(request, request.participants, target=attribute)
        cells = analysis.cells(request, plan)
        progress(0.3)
        reconstructed = tables.distribution_from_table(plan, cells)
        size = _check_group(request, request.thresholds.min_responses)
    else:
        reconstructed, _ = analysis.overall_distribution(request.survey, question, request.method)
        size = None
    progress(0.9)
    payload = analysis.distribution_payload(
        reconstructed,
        question,
        request.thresholds.min_cell,
        exact=disclosure.is_exact(request, request.keys),
    )
    if request.whole_numbers:
        payload["notes"] = [
            *(note_json(note) for note in analysis.whole_number_notes(request)),
            *payload.get("notes", []),
        ]
    threshold_notes = analysis.whole_threshold_notes(request)
    if threshold_notes:
        payload["notes"] = [*payload.get("notes", []), *map(note_json, threshold_notes)]
    if size is not None:
        # The group's size interval it was judged on (the query audit judges it so too).
        payload["group_size_ci95"] = interval_json(size.ci95)
    return payload


register(
    AnalysisKind(
        name="distribution",
        summary="the reconstructed distribution of a question, overall or within a group "
        "(discrete questions: em_as by default; continuous ones: em by default)",
        methods=(*DISCRETE_METHODS, *CONTINUOUS_METHODS),
        default_method=None,
        attribute="required",
        methods_for=_distribution_methods,
        validate=_validate_distribution,
        compute=_distribution,
    )
)


# --------------------------------------------------------------------------- sample


def _validate_sample(request: AnalysisRequest) -> None:
    size = int(request.spec["size"])
    if size > request.participants:
        raise AnalysisInputError(
            {
                "size": Message(
                    gettext_noop(
                        "a sample of %(size)s is larger than the %(participants)s participants "
                        "who answered"
                    ),
                    {"size": size, "participants": request.participants},
                )
            }
        )


_TOO_LARGE = gettext_noop(
    "a sample of %(size)s (or one of its strata) is larger than the estimated pool "
    "of participants meeting its condition"
)


def _pool_interval(size: disclosure.GroupSize | None) -> dict[str, Any]:
    """The pool's size interval it was judged on (``pool_ci95``; none without 'where')."""
    return {} if size is None else {"pool_ci95": interval_json(size.ci95)}


def _sample(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    if (request.method or "posterior") == "posterior":
        return _sample_posterior(request, progress)
    return _sample_figure3(request, progress)


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
        plan: tables.CellPlan | None,
        scores: Any,
        quota: int,
        before: int,
        width: int,
    ) -> None:
        self.plan, self.scores, self.quota = plan, scores, quota
        self.best = tables.TopCandidates(quota + before, width=width)
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
            score = self.scores[tables.flat_cells(self.plan, columns)]
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


def _sample_posterior(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    """The posterior draw of :func:`~reconstruction.algorithms.queries.sample`, streamed.

    Each condition's posterior comes from one fit of its cell table; the tables of the
    pool, every stratum and every subcondition are counted in one scan
    (:func:`surveys.statistics.cell_counts_many`). Then the participants are read once,
    in chunks, and every quota keeps only its best candidates
    (:class:`~reconstruction.algorithms.tables.TopCandidates`): memory is the quotas
    plus one chunk, whatever the number of participants. The quotas are filled in
    order, each without the participants the earlier ones chose; each quota's random
    tie-break keys are one seeded uniform draw per participant in stream order, the
    quotas' draws following each other, so a seed reproduces the panel.
    """
    seed = request.spec.get("seed")
    size = int(request.spec["size"])
    min_cell = request.thresholds.min_cell
    n = request.participants
    generator = np.random.default_rng(seed)
    keys = request.keys
    questions = [request.questions[key] for key in keys]
    using = statistics.analysis_alias()

    specs = {key: analysis.question_spec(request.questions[key]) for key in keys}
    quotas = (
        [([*request.where, *stratum], quota) for stratum, quota in request.strata]
        if request.strata
        else [(list(request.where), size)]
    )

    def label(conds: list[Any]) -> tuple[str, ...]:
        return tuple(queries.condition_label(c) for c in conds)

    def axes_of(plan: tables.CellPlan) -> list[statistics.Axis]:
        return [
            statistics.Axis(
                request.questions[name],
                None if edges is None else statistics.finite_edges(edges),
            )
            for name, edges in zip(plan.names, plan.reported_edges, strict=True)
        ]

    # Each condition's cells are read and fitted once, whoever asks (the group checks,
    # the pool, the quotas, the subconditions' precisions): all of them in one scan.
    needed: dict[tuple[str, ...], list[Any]] = {}
    for conds in [list(request.where), *(conds for conds, _quota in quotas)]:
        if conds:
            needed.setdefault(label(conds), conds)
            for cond in conds:
                needed.setdefault(label([cond]), [cond])
    plans = {key: tables.plan_cells(specs, conds, n=n) for key, conds in needed.items()}
    counts = statistics.cell_counts_many(
        request.survey,
        [axes_of(plan) for plan in plans.values()],
        require=questions,
        using=using,
    )
    read: dict[tuple[str, ...], tuple[tables.CellPlan, tables.CellTable]] = {
        key: (plan, tables.CellTable(table))
        for (key, plan), table in zip(plans.items(), counts, strict=True)
    }
    fitted: dict[tuple[str, ...], tuple[tables.CellPlan | None, Any, float]] = {}

    def counted(conds: list[Any]) -> tuple[tables.CellPlan, tables.CellTable]:
        key = label(conds)
        if key not in read:
            plan = tables.plan_cells(specs, conds, n=n)
            read[key] = (plan, tables.CellTable(analysis.cells(request, plan).counts))
        return read[key]

    def posterior(conds: list[Any]) -> tuple[tables.CellPlan | None, Any, float]:
        if not conds:
            return None, None, float(n)
        key = label(conds)
        if key not in fitted:
            plan, table = counted(conds)
            scores, estimate = tables.posterior_from_table(plan, table)
            fitted[key] = (plan, scores.ravel(), estimate)
        return fitted[key]

    # The pool and every stratum are groups like any other (issue 13, finding 2; issue
    # 10, item 4): each size's 95% interval passes the count threshold (the threshold
    # point, reconstruction/disclosure.py), and the refusal never states it.
    pool_size = None
    if request.where:
        pool_size = disclosure.group_size(request, counted=counted)
        disclosure.check_group(pool_size, min_cell)
    for i, (stratum, _quota) in enumerate(request.strata):
        pool = disclosure.group_size(request, [*request.where, *stratum], counted=counted)
        disclosure.check_group(pool, min_cell, label=f"strata[{i}]: ")
    pool_estimate = posterior(list(request.where))[2] if request.where else float(n)
    fits = [posterior(conds) for conds, _quota in quotas]
    progress(0.3)
    passes: list[_Pass] = []
    scans: list[tuple[list[statistics.Axis], list[int] | None]] = []
    before = 0
    for (conds, quota), (plan, scores, estimate) in zip(quotas, fits, strict=True):
        if quota > min(round(estimate), n - before):
            raise JobRefused(Message(_TOO_LARGE, {"size": size}))
        # Only the best cells' participants can be chosen: enough of them to fill the
        # quota even if every one the earlier quotas take is among them. The rest never
        # leave the database; every participant keeps their stream position, so each
        # candidate gets the same tie-break key as when all were streamed.
        axes: list[statistics.Axis] = []
        wanted = None
        if plan is not None:
            cell_counts = counted(conds)[1].counts.ravel()
            order = np.argsort(-scores, kind="stable")
            reach = int(np.searchsorted(np.cumsum(cell_counts[order]), quota + before))
            if reach < order.size:
                wanted = np.flatnonzero(scores >= scores[order[reach]]).tolist()
                axes = axes_of(plan)
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
            raise JobRefused(Message(_TOO_LARGE, {"size": size}))
        taken = np.concatenate([taken, ids])
        order = np.argsort(ids)
        chosen.append((ids[order], rows[order]))
        precision.append(scores)
    progress(0.8)
    # Per subcondition: the posterior of the chosen under that subcondition alone.
    per_condition: dict[str, list[Any]] = {}
    for (conds, _size), (_ids, rows) in zip(quotas, chosen, strict=True):
        for cond in conds:
            plan, scores, _estimate = posterior([cond])
            assert plan is not None
            columns = {key: rows[:, keys.index(key)] for key in plan.names}
            per_condition.setdefault(queries.condition_label(cond), []).append(
                scores[tables.flat_cells(plan, columns)]
            )
    progress(0.9)
    everyone = np.sort(np.concatenate([ids for ids, _ in chosen]))
    return {
        "participants": statistics.participant_references(everyone.tolist(), using=using),
        "strata": [
            statistics.participant_references(ids.tolist(), using=using) for ids, _ in chosen
        ]
        if request.strata
        else [],
        "pool_estimate": float(pool_estimate),
        **_pool_interval(pool_size),
        "expected_precision": float(np.concatenate(precision).mean()),
        "subcondition_precision": {
            label: float(np.concatenate(parts).mean()) for label, parts in per_condition.items()
        },
        "seed": seed,
        "method": "posterior",
    }


def _sample_figure3(request: AnalysisRequest, progress: Progress) -> dict[str, Any]:
    """Figure 3's sample assigns values to every participant: it reads them all."""
    seed = request.spec.get("seed")
    size = int(request.spec["size"])
    min_cell = request.thresholds.min_cell
    # The pool and every stratum are groups like any other (issue 13, finding 2): each
    # size's interval passes the count threshold, and the refusal never states it.
    pool_size = _check_group(request, min_cell) if request.where else None
    for i, (stratum, _quota) in enumerate(request.strata):
        pool = disclosure.group_size(request, [*request.where, *stratum])
        disclosure.check_group(pool, min_cell, label=f"strata[{i}]: ")
    prepared = analysis.load(request)
    progress(0.3)
    try:
        drawn = queries.sample(
            prepared.table,
            size,
            prepared.where,
            strata=prepared.strata,
            method="figure3",
            rng=np.random.default_rng(seed),
        )
    except ValueError as exc:
        if "larger than the pool" not in str(exc):
            raise
        raise JobRefused(Message(_TOO_LARGE, {"size": size})) from None
    progress(0.9)
    participants = analysis.references(prepared, drawn.rows)
    return {
        "participants": participants,
        "strata": [analysis.references(prepared, rows) for rows in drawn.strata_rows]
        if request.strata
        else [],
        "pool_estimate": float(drawn.pool_estimate),
        **_pool_interval(pool_size),
        "expected_precision": float(drawn.expected_precision),
        "subcondition_precision": {label: value for label, value in drawn.subcondition_precision},
        "seed": seed,
        "method": drawn.method,
    }


register(
    AnalysisKind(
        name="sample",
        summary="participants drawn for a deliberative panel (001, Section IV-B)",
        methods=("posterior", "figure3"),
        default_method="posterior",
        sampling=True,
        group_threshold="min_cell",
        validate=_validate_sample,
        compute=_sample,
    )
)

# The panel kind lives in its own module (issue 14); it registers itself on import.
from reconstruction import panels as _panels  # noqa: E402

del _panels

__all__ = [
    "KINDS",
    "AnalysisKind",
    "JobRefused",
    "all_methods",
    "compute",
    "get",
    "kind_choices",
    "methods_description",
    "register",
    "validate_request",
]
