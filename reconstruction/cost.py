"""The cost model of an analysis, checked before anything is queued (issue 13, finding 3).

Every estimator of a conditional quantity fits EM over the *product channel* of the
attributes the request names (001_28af1923c784b480.txt, Section IV-A1: conditions over
several attributes; reconstruction/algorithms/queries.py, ``count_joint``). One EM
iteration touches every cell of the joint table once per attribute, and the interval
refits the model on ``N_BOOT`` participant-bootstrap replicates. The cost of a request
is therefore estimated, from the schema alone, as

    cost = cells x (1 + replicates)

- ``cells``: the product over the named attributes of their sizes: a discrete question's
  number of categories; a continuous question's number of intervals, which the engine
  caps so that the continuous axes of one table stay within ``_JOINT_MAX_CELLS`` (20,000)
  cells (at most 40 per axis), plus one interval per threshold of the request on it;
- ``replicates``: ``N_BOOT`` (200) for the kinds that give an interval (count, mean,
  distribution), none for a sample;
- the size of every group judged against a threshold (a mean's, a distribution's or a
  sample's condition, each stratum of a sample) is the joint count of its condition with
  its interval (reconstruction/disclosure.py): ``cells(condition) x (1 + N_BOOT)`` more,
  or nothing when its attributes are undistorted (counted exactly).

plus the *reading*, which grows with the participants while the fits do not (their
tables are counted in SQL): ``READ_UNITS`` per participant and attribute of every SQL
cell count (the fit's table, every judged group; a sample's one scan of all its tables,
:func:`reads`), a sample's one candidate stream (``STREAM_UNITS`` per participant and
attribute, :func:`streamed`) and the candidates its passes receive (``CANDIDATE_UNITS``
each, :func:`candidates`), and the ``figure3`` methods' assignments of values to every
participant in the worker (``FIGURE3_UNITS`` per participant, attribute and bootstrap
replicate, :func:`assignments`). ``READ_UNITS`` is calibrated on measured reading time, not on the
fits': ``bench/bench_cost.py --accepted`` times the SQL cell counts of 1-4 attributes
and a sampling pass at 10^6 participants (0.12-0.18 and 0.43 microseconds per
participant and attribute on PostgreSQL, 2026-11-25), and ``bench/bench_scale.py``
measured 0.2-0.35 microseconds end to end at 10^7 (count, mean, sample). At 0.01 units
(0.6 microseconds at the budget's 60 s per 10^6 units) a request whose cost is all
reading still ends within the 60 s, while a national survey's ordinary count or mean at
10^7 (2-3 attributes: 200,000-300,000 units of reading) is accepted; a sample of 50
one-year age strata (its passes receive most participants 50 times over) is refused from
about 10^6 participants on, and bench_scale's 5 strata within two districts are accepted
at 10^7 (0.9 million units; issue 32).

Iterations are capped by the engine (``max_iter``) and taken as a constant factor: the
budget ``ANALYSIS_COST_BUDGET`` is calibrated in seconds per cost unit by
``bench/bench_cost.py`` (``--accepted`` runs the most expensive accepted requests end to
end at 10^6 participants; README, "Cost model").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from django.conf import settings
from django.utils.translation import gettext_noop

from privacy.mechanisms.messages import Message
from reconstruction.analysis import (
    AnalysisInputError,
    AnalysisRequest,
    ConditionSpec,
    whole_number_tests,
)

N_BOOT = 200
JOINT_MAX_CELLS = 20_000
MAX_INTERVALS = 40


def _thresholds(conditions: Sequence[ConditionSpec], key: str) -> int:
    count = 0
    for condition in conditions:
        if condition.attribute != key:
            continue
        value = condition.value
        count += len(value) if isinstance(value, (list, tuple)) else 1
    return count


MAX_LATTICE_POINTS = 128
"""The engine's one cell per lattice point up to this many points
(``reconstruction.algorithms.continuous.MAX_LATTICE_CELLS``)."""

Model = str
"""How a continuous axis is modelled: ``"interval"``, ``"lattice"`` (a declared step,
or whole numbers detected), ``"either"`` (tested for whole numbers: one of the two) or
``"both"`` (tested, and a joint count averages both when the test is inconclusive)."""


def _axis_cells(question: Any, per_axis: int, uncapped: int, thresholds: int, model: Model) -> int:
    """True cells of one continuous axis under ``model`` (see :data:`Model`)."""
    intervals = per_axis + thresholds
    if model == "interval":
        return intervals
    step = float(question.step) if question.step is not None else 1.0
    points = round((float(question.range_high) - float(question.range_low)) / step) + 1
    # One cell per point up to 128 points when the axis is not squeezed, else at most
    # the squeezed count; larger lattices are grouped like intervals.
    limit = MAX_LATTICE_POINTS if uncapped >= MAX_INTERVALS else per_axis
    lattice = points if points <= limit else intervals
    if model == "lattice":
        return lattice
    return lattice + intervals if model == "both" else max(lattice, intervals)


def fit_cells(
    questions: Mapping[str, Any],
    keys: Sequence[str],
    conditions: Sequence[Any],
    models: Mapping[str, Model] | None = None,
) -> int:
    """Cells of the joint table over ``keys`` (see the module docstring).

    ``models`` gives an attribute's model (:data:`Model`; default intervals): a
    lattice has one cell per point up to 128 points (85 for ages 16..100, not 40
    intervals). With ``"both"`` on some axes the result is the cells of every
    combination of the models summed (each model is one fit of its own table), the
    product of the axes' sums.
    """
    models = models or {}
    discrete = [questions[k] for k in keys if questions[k].is_discrete]
    continuous = [k for k in keys if not questions[k].is_discrete]
    cells = math.prod(int(q.n_categories) for q in discrete)
    if continuous:
        uncapped = int((JOINT_MAX_CELLS / max(cells, 1)) ** (1.0 / len(continuous)))
        per_axis = max(2, min(MAX_INTERVALS, uncapped))
        for key in continuous:
            question = questions[key]
            model = models.get(key, "interval")
            cells *= _axis_cells(question, per_axis, uncapped, _thresholds(conditions, key), model)
    return int(cells)


def whole_number_models(request: AnalysisRequest) -> dict[str, Model]:
    """The models of the attributes the worker tests for whole numbers
    (:func:`~reconstruction.analysis.whole_number_tests`): ``"both"`` where a joint
    count may average them (bounded uniform noise, issue 10), else ``"either"``."""
    from privacy.mechanisms import AdditiveUniform
    from surveys import selectors

    keys, average = whole_number_tests(request)
    models: dict[str, Model] = {}
    for key in keys:
        noise = selectors.question_noise(request.questions[key])
        models[key] = "both" if average and isinstance(noise, AdditiveUniform) else "either"
    return models


READ_UNITS = 0.01
"""Cost units per participant and attribute read from the database by a cell count in
SQL (a sample's streamed pass: :data:`STREAM_UNITS`): 0.6 microseconds at the budget's
60 microseconds per unit, above the 0.12-0.43 microseconds bench/bench_cost.py
--accepted measures at 10^6 participants and the 0.2-0.35 bench/bench_scale.py measured
end to end at 10^7 (README, "Cost model"). It was 0.05 (3 microseconds), which refused
every analysis at 10^7."""


STREAM_UNITS = 0.02
"""Cost units per participant and attribute of a sample's candidate stream (every
participant ranked in SQL by their position, the wanted cells' rows sent out; the
candidates themselves are :data:`CANDIDATE_UNITS`): 1.2 microseconds at the budget's 60
per unit, about twice :data:`READ_UNITS`. bench/bench_cost.py measured a pass over 2
attributes at 0.47-1.49 microseconds per participant and attribute, candidates included
(200,000 to 3 x 10^6 participants, load 4-8, 2026-11-27); bench_scale's sample of 100 at
10^7 took 12.3 s end to end (2026-11-27 13:50-14:00 UTC, load 0.5-5.9), 1.2 microseconds
per participant for its scan, stream and fit together."""

CANDIDATE_UNITS = 0.4
"""Cost units per candidate a sample's pass receives from the stream (24 microseconds):
the rows of the cells it wants leave the database and are ranked in the worker. A pass
wants about one reported cell of its condition's table (enough candidates to fill its
quota and the earlier ones'), so it receives about ``participants / cells`` of them, and
everyone when it has no condition. A sample in 50 one-year age strata receives most of
the participants 50 times over: bench/bench_cost.py --samples measured about 21
microseconds per participant (24 s at 10^6, 64 s at 3 x 10^6, load 5-8, 2026-11-27) where
bench_scale's 5 strata within two districts took 3.3 (6.8 s and 13.3 s)."""


def _keys_of(conditions: Sequence[ConditionSpec]) -> list[str]:
    return list(dict.fromkeys(c.attribute for c in conditions))


def _streams_once(request: AnalysisRequest) -> bool:
    """A sample by posterior ranking: its tables are read in one scan, its passes share one
    stream (reconstruction/kinds/sample.py; ``figure3`` loads every participant instead)."""
    return bool(request.kind.streams) and request.method == "posterior"


def reads(request: AnalysisRequest) -> int:
    """Participant-attribute reads of a request: one per attribute of every SQL cell count
    (the fit's table, every judged group), and a sample's one scan.

    The fits' cost does not grow with the participants (the tables are counted in SQL);
    the reading does. A sample by posterior ranking counts every table it needs (the
    pool, each stratum, each subcondition) in one scan of the attributes it names
    (``GROUP BY GROUPING SETS``), and streams the participants once for all its passes
    (:func:`streamed`, :func:`candidates`); a ``figure3`` sample counts each group on its
    own and streams once per stratum.
    """
    params, kind = request.params, request.kind
    where = list(params.where)
    where_keys = _keys_of(where)
    named = ([request.attribute] if request.attribute else []) + where_keys
    attributes = 0
    if kind.streams:
        strata = [[*where, *s.where] for s in params.strata]
        every = len(dict.fromkeys([*named, *(k for s in strata for k in _keys_of(s))]))
        if _streams_once(request):
            attributes += every  # one scan counts every table
        else:
            attributes += 2 * len(where_keys)  # the pool judged, then its posterior
            for conditions in strata or [where]:
                keys = len(_keys_of(conditions))
                attributes += 2 * keys + every  # judged, fitted, one streamed pass
    else:
        read = len(dict.fromkeys(named))
        attributes += read  # the fit's table
        if where and kind.judges_group:
            attributes += len(where_keys)  # the group's size
        # The whole-number tests (issue 10): one half-unit histogram per tested
        # attribute, over everyone who answered the request's attributes (a join of
        # them), and one more table per further averaged model.
        models = whole_number_models(request)
        attributes += len(models) * read
        averaged = sum(model == "both" for model in models.values())
        attributes += (2**averaged - 1) * read
    return int(max(int(request.participants), 0) * attributes)


def streamed(request: AnalysisRequest) -> int:
    """Participant-attribute reads of a sample's one candidate stream (every attribute it
    names, every participant; none for other kinds)."""
    if not _streams_once(request):
        return 0
    params = request.params
    keys = _keys_of([*params.where, *(c for s in params.strata for c in s.where)])
    return int(max(int(request.participants), 0) * len(keys))


def candidates(request: AnalysisRequest) -> int:
    """The candidates a sample's passes receive from its stream: per pass (each stratum,
    or the pool) the participants over the cells of its condition's table (one cell's
    worth), everyone for a pass without a condition."""
    if not _streams_once(request):
        return 0
    params = request.params
    where = list(params.where)
    n = max(int(request.participants), 0)
    models = _models(request)
    total = 0.0
    for conditions in [[*where, *s.where] for s in params.strata] or [where]:
        if not conditions:
            total += n
            continue
        cells = fit_cells(request.questions, _keys_of(conditions), conditions, models)
        total += n / max(cells, 1)
    return int(total)


def _models(request: AnalysisRequest) -> dict[str, Model]:
    """The model of every attribute the fits price: a declared step on its lattice, the
    attributes tested for whole numbers at the model they may get
    (:func:`whole_number_models`)."""
    models: dict[str, Model] = {
        key: "lattice"
        for key, question in request.questions.items()
        if not question.is_discrete and question.step is not None
    }
    models.update(whole_number_models(request))
    return models


FIGURE3_UNITS = 0.002
"""Cost units per participant and attribute that a ``figure3`` method assigns in the
worker's memory (:func:`assignments`): 0.12 microseconds at the budget's 60 microseconds
per unit, above the 0.03-0.094 microseconds per participant, attribute and replicate
that Figure 3's count took in one run at 10^5 and 10^6 participants (2026-11-25; README,
"Cost model"). Without it a ``figure3`` count (200 bootstrap replicates, each
assigning every participant) was priced like the ``joint`` one, which fits SQL tables."""


def assignments(request: AnalysisRequest) -> int:
    """Participant-attribute assignments of the ``figure3`` methods (001, Figure 3).

    They load every participant's answers and assign values to them stage by stage
    (one stage per attribute of the condition), in Python: a count repeats the whole
    procedure on each of its ``N_BOOT`` bootstrap replicates, a mean runs it once, a
    sample once per quota. Other methods assign nothing (their fits are counted in SQL).
    """
    if request.method != "figure3":
        return 0
    params = request.params
    where = list(params.where)
    where_keys = _keys_of(where)
    attributes = len(
        dict.fromkeys([*([request.attribute] if request.attribute else []), *where_keys])
    )
    if request.kind.figure3_bootstrap:
        attributes *= 1 + N_BOOT
    for stratum in params.strata:
        attributes += len(_keys_of([*where, *stratum.where]))
    return int(max(int(request.participants), 0) * attributes)


def analysis_cost(request: AnalysisRequest) -> int:
    """The estimated cost of a resolved request: cells x fits, plus reading."""
    return fit_cost(request) + _reading_cost(request)


def _reading_cost(request: AnalysisRequest) -> int:
    """The part that grows with the participants: SQL reads and Figure 3's assignments."""
    return (
        int(READ_UNITS * reads(request))
        + int(STREAM_UNITS * streamed(request))
        + int(CANDIDATE_UNITS * candidates(request))
        + int(FIGURE3_UNITS * assignments(request))
    )


def fit_cost(request: AnalysisRequest) -> int:
    """The fits' part of :func:`analysis_cost`, in cells x fits."""
    params, kind = request.params, request.kind
    where = list(params.where)
    named = ([request.attribute] if request.attribute else []) + [c.attribute for c in where]
    keys = list(dict.fromkeys(named))
    replicates = N_BOOT if kind.interval else 0
    if kind.overall_alone and not where:
        # One question alone: its own channel, no product (cheap whatever the method).
        keys = [k for k in keys if k == request.attribute]
    # A declared step is priced on its lattice; attributes tested for whole numbers at
    # the model they may get (the lattice of whole numbers, 85 cells for ages 16..100,
    # or intervals), and a joint count's at both models when it may average them.
    models = _models(request)
    cost = fit_cells(request.questions, keys, where, models) * (1 + replicates)
    if where and kind.judges_group:
        # The group's size is judged on its own interval (reconstruction/disclosure.py):
        # the joint count of the condition with its bootstrap.
        cost += _group_cost(request, where, models)
    for stratum in params.strata:
        cost += _group_cost(request, [*where, *stratum.where], models)
    return int(cost)


def _group_cost(
    request: AnalysisRequest,
    where: Sequence[ConditionSpec],
    models: Mapping[str, Model] | None = None,
) -> int:
    keys = list(dict.fromkeys(c.attribute for c in where))
    if all(request.questions[k].mechanism == "none" for k in keys):
        return 1  # counted exactly (one SQL COUNT)
    return fit_cells(request.questions, keys, where, models) * (1 + N_BOOT)


def _footnote(**figures: str) -> Message:
    """The figures behind a refusal, as the message's last sentence (its footnote)."""
    return Message(
        gettext_noop(
            "(Figures: estimated cost %(cost)s units against a limit of %(budget)s "
            "(ANALYSIS_COST_BUDGET, about 60 seconds on the reference machine): %(parts)s.)"
        ),
        figures,
    )


def check_cost(request: AnalysisRequest) -> int:
    """Refuse a request whose estimated cost exceeds ``ANALYSIS_COST_BUDGET``; returns the cost."""
    return check_budget(fit_cost(request), _reading_cost(request))


def check_budget(fits: int, reading: int) -> int:
    """Refuse a cost of ``fits`` + ``reading`` units above ``ANALYSIS_COST_BUDGET`` (a 400
    saying in plain words what to change, with both figures as its last sentence);
    returns the cost. Kinds that price themselves call it too."""
    budget = int(settings.ANALYSIS_COST_BUDGET)
    cost = fits + reading
    if cost > budget:
        parts = Message(
            gettext_noop(
                "%(fits)s for fitting the joint table of the conditions with its bootstrap "
                "replicates, %(reading)s for reading the answers"
            ),
            {"fits": f"{fits:,}", "reading": f"{cost - fits:,}"},
        )
        raise AnalysisInputError(
            {
                "where": Message(
                    gettext_noop(
                        "This analysis would take more than a minute. Use fewer conditions "
                        "or strata, or narrower ones: conditions on questions with fewer "
                        "categories. %(figures)s"
                    ),
                    {"figures": _footnote(cost=f"{cost:,}", budget=f"{budget:,}", parts=parts)},
                )
            }
        )
    return cost


# --------------------------------------------------------------------------- panels

PANEL_N_BOOT = 100
"""Bootstrap replicates behind a panel's intervals (``select_panel``'s ``n_boot``)."""

PANEL_CANDIDATE_UNITS = 1
"""Cost units per candidate and posterior (each quota and the eligibility): the reading
and the posteriors with their replicates. bench/bench_cost.py --panels measured 2-3 s for
30,000 candidates and 3-5 quotas end to end before the solver (2026-11-27, load 5-8):
about 25 microseconds per candidate and posterior, under the unit's 60. It was 10 units,
which refused the issue's panel of 30 with 3 quotas over 30,000 (1.2 million units) that
ends in 5 seconds (issue 32)."""

PANEL_TYPE_UNITS = 0.05
"""Cost units per squared candidate type: the solver. Its master LP has a row and its
pricing MILPs a variable per type, and its time grew with the square of the types:
2,400 types took 14-17 s and 5,700 types 95-110 s (load 5-8), about 3 microseconds per
squared type, the unit's 60 x 0.05 (bench/bench_cost.py --panels). The budget thus
admits about 4,400 types on their own."""

PANEL_SEAT_UNITS = 0.1
"""Cost units per seat, type and quota (+1): a larger panel makes larger pricing MILPs
(panels of 30 and 100 over 2,400 types took about the same time, so the weight is small)."""


def panel_types_floor(request: AnalysisRequest) -> int:
    """A low estimate of the candidate types the quotas make, from the schema alone.

    A candidate's type is its vector of posteriors, one per quota, and a quota's
    posterior depends on the reported cell of its own attributes; the engine merges
    types whose posteriors are nearly equal, so the real number is known only in the
    worker (``select_panel``'s ``max_types``). From the schema: a discrete quota
    attribute splits the candidates at least into the categories its quotas name and
    the rest, a continuous one at least into the intervals between its thresholds; at
    most the participants. The request is refused on this estimate only when even it
    is too slow.
    """
    params: Any = request.params
    named: dict[str, set[Any]] = {}
    cuts: dict[str, int] = {}
    for quota in params.quotas:
        for condition in quota.where:
            value = condition.value
            values = list(value) if isinstance(value, (list, tuple, set, frozenset)) else [value]
            named.setdefault(condition.attribute, set()).update(map(str, values))
            cuts[condition.attribute] = cuts.get(condition.attribute, 0) + len(values)
    types = 1
    for key, values in named.items():
        question = request.questions[key]
        if question.is_discrete:
            types *= min(int(question.n_categories), len(values) + 1)
        else:
            types *= cuts[key] + 1
    return max(1, min(max(int(request.participants), 1), types))


def panel_solver_cost(types: int, size: int, quotas: int) -> int:
    """The solver's cost units for ``types`` candidate types (see :data:`PANEL_TYPE_UNITS`)."""
    return int(PANEL_TYPE_UNITS * types * types + PANEL_SEAT_UNITS * size * types * (quotas + 1))


def _panel_parts(request: AnalysisRequest) -> tuple[int, int]:
    """The fits' and the candidates' units of a panel (everything but the solver)."""
    params: Any = request.params  # the panel's request (reconstruction/kinds/panel.py)
    where = list(params.where)
    quotas = list(params.quotas)
    n = max(int(request.participants), 1)
    where_keys = list(dict.fromkeys(c.attribute for c in where))
    fits = 0
    if where:
        fits += fit_cells(request.questions, where_keys, where) * (1 + N_BOOT + PANEL_N_BOOT)
    for quota in quotas:
        conditions = [*where, *quota.where]
        keys = list(dict.fromkeys(c.attribute for c in conditions))
        fits += fit_cells(request.questions, keys, conditions) * (1 + N_BOOT + PANEL_N_BOOT)
    return fits, int(n * (len(quotas) + 1) * PANEL_CANDIDATE_UNITS)


def panel_cost(request: AnalysisRequest, types: int | None = None) -> int:
    """The estimated cost of a panel (issue 14), in the same units plus the solver's.

    - fits: the eligible pool and each quota category within it are counted with an
      interval (``N_BOOT`` replicates), then the eligibility and every quota are refitted
      for the posteriors (``PANEL_N_BOOT`` replicates), each over the joint table of its
      attributes;
    - candidates: ``participants x (quotas + 1) x PANEL_CANDIDATE_UNITS`` (the reading,
      the posteriors and their replicates);
    - solver: :func:`panel_solver_cost` of the candidate types: ``types`` when known (the
      worker), else :func:`panel_types_floor` (the request: the schema alone).

    Calibrated by ``bench/bench_cost.py --panels`` (panels of 30 over 30,000 and of 100
    over 10,000 participants with 2-5 quotas, predicted against measured seconds).
    """
    params: Any = request.params
    fits, candidates = _panel_parts(request)
    if types is None:
        types = panel_types_floor(request)
    solver = panel_solver_cost(types, int(params.size or 0), len(params.quotas))
    return int(fits + candidates + solver)


def panel_max_types(request: AnalysisRequest) -> int:
    """The most candidate types the budget leaves the solver (``select_panel``'s
    ``max_types``): the largest ``t`` whose :func:`panel_solver_cost` fits in the budget
    after the fits and the candidates (at least 1)."""
    params: Any = request.params
    fits, candidates = _panel_parts(request)
    left = int(settings.ANALYSIS_COST_BUDGET) - fits - candidates
    size, quotas = int(params.size or 0), len(params.quotas)
    b = PANEL_SEAT_UNITS * size * (quotas + 1)
    if left <= 0:
        return 1
    most = int((-b + math.sqrt(b * b + 4 * PANEL_TYPE_UNITS * left)) / (2 * PANEL_TYPE_UNITS))
    while most > 1 and panel_solver_cost(most, size, quotas) > left:
        most -= 1
    while panel_solver_cost(most + 1, size, quotas) <= left:  # its int() can fit one more
        most += 1
    return max(1, most)


def panel_refusal(request: AnalysisRequest, cost: int, types: int) -> Message:
    """A panel's refusal in plain words: what to change, then the figures."""
    budget = int(settings.ANALYSIS_COST_BUDGET)
    params: Any = request.params
    parts = Message(
        gettext_noop(
            "%(types)s kinds of candidates to balance (distinct answers to the quotas' "
            "questions); quotas: %(quotas)s, seats: %(size)s, participants: %(participants)s"
        ),
        {
            "types": f"{types:,}",
            "quotas": len(params.quotas),
            "size": int(params.size or 0),
            "participants": f"{int(request.participants):,}",
        },
    )
    return Message(
        gettext_noop(
            "This panel would take more than a minute to select. Ask for fewer quotas, or "
            "put them on questions with fewer categories (for example one quota per age "
            "band rather than on exact ages). %(figures)s"
        ),
        {"figures": _footnote(cost=f"{cost:,}", budget=f"{budget:,}", parts=parts)},
    )


def check_panel_cost(request: AnalysisRequest) -> int:
    """Refuse a panel whose estimated cost exceeds ``ANALYSIS_COST_BUDGET``; returns it.

    At request time the solver is priced on :func:`panel_types_floor`; the worker
    passes :func:`panel_max_types` to the solver, which refuses once the real number of
    types is known (``reconstruction/kinds/panel.py``).
    """
    budget = int(settings.ANALYSIS_COST_BUDGET)
    cost = panel_cost(request)
    if cost > budget:
        raise AnalysisInputError(
            {"quotas": panel_refusal(request, cost, panel_types_floor(request))}
        )
    return cost


def panel_types(request: AnalysisRequest, quotas: Sequence[Any]) -> int:
    """The candidate types the worker's solver would get, counted before anything is queued.

    ``quotas``: the request's quotas as the engine's ``Quota`` (reconstruction/kinds/panel.py).
    Reads no answer row: one ``GROUP BY`` in half units per continuous attribute without a
    declared step (the worker's whole-number test, :func:`~reconstruction.analysis.
    whole_number_verdict`), then one ``GROUP BY`` of the occupied joint reported cells of
    the quotas' and the eligibility's attributes (:func:`surveys.statistics.occupied_cells`);
    the posteriors are point fits of the worker's models on those cells, and the types are
    merged as the worker merges them
    (:func:`reconstruction.algorithms.panel.types.count_types`).
    """
    import dataclasses

    from reconstruction import analysis
    from reconstruction.algorithms.panel import types as panel_types_engine
    from surveys import statistics

    params: Any = request.params
    everyone = [request.questions[key] for key in request.keys]
    names = list(
        dict.fromkeys(
            [*_keys_of(request.where), *_keys_of([c for quota in quotas for c in quota.where])]
        )
    )
    specs = {}
    for key in names:
        question = request.questions[key]
        spec = analysis.question_spec(question)
        if (
            not question.is_discrete
            and analysis.whole_number_verdict(request.survey, question, everyone)[0]
        ):
            spec = dataclasses.replace(spec, step=1.0)  # type: ignore[type-var]
        specs[key] = spec
    using = statistics.analysis_alias()
    n = max(int(request.participants), 1)
    for _attempt in range(2):
        bins = panel_types_engine.type_bins(specs, quotas, request.where, n)
        axes = [statistics.Axis(request.questions[key], bins[key]) for key in bins]
        cells, counts = statistics.occupied_cells(
            request.survey, axes, require=everyone, using=using
        )
        counted = int(counts.sum())
        if counted < 1:
            return 0
        again = panel_types_engine.type_bins(specs, quotas, request.where, counted)
        if counted == n or _same_bins(again, bins):
            n = counted
            break
        n = counted  # planned for the tallies' bound: plan again for the exact count
    columns = {key: cells[:, i] for i, key in enumerate(bins)}
    return panel_types_engine.count_types(
        specs,
        quotas,
        request.where,
        size=int(params.size or 0),
        n=n,
        bins=bins,
        cells=columns,
        counts=counts,
        options=_panel_options(params),
    )


def _same_bins(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return list(a) == list(b) and all(
        (a[k] is None and b[k] is None)
        or (a[k] is not None and b[k] is not None and np.array_equal(a[k], b[k]))
        for k in a
    )


def _panel_options(params: Any) -> Any:
    from reconstruction.algorithms.panel import PanelOptions

    return PanelOptions(max_outside=params.max_outside)


def check_panel_types(request: AnalysisRequest, quotas: Sequence[Any]) -> int:
    """Refuse a panel whose candidate types (:func:`panel_types`) need more than the
    budget leaves the solver (:func:`panel_max_types`): the 400 the worker would
    otherwise end the job with, seconds later (issue 32). Returns the types."""
    types = panel_types(request, quotas)
    if types > panel_max_types(request):
        raise AnalysisInputError(
            {"quotas": panel_refusal(request, panel_cost(request, types), types)}
        )
    return types
