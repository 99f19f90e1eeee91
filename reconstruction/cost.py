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
cell count (the fit's table, every judged group) and of every streamed pass of a sample
(:func:`reads`), and the ``figure3`` methods' assignments of values to every participant
in the worker (``FIGURE3_UNITS`` per participant, attribute and bootstrap replicate,
:func:`assignments`). ``READ_UNITS`` is calibrated on measured reading time, not on the
fits': ``bench/bench_cost.py --accepted`` times the SQL cell counts of 1-4 attributes
and a sampling pass at 10^6 participants (0.12-0.18 and 0.43 microseconds per
participant and attribute on PostgreSQL, 2026-11-25), and ``bench/bench_scale.py``
measured 0.2-0.35 microseconds end to end at 10^7 (count, mean, sample). At 0.01 units
(0.6 microseconds at the budget's 60 s per 10^6 units) a request whose cost is all
reading still ends within the 60 s, while a national survey's ordinary count or mean at
10^7 (2-3 attributes: 200,000-300,000 units of reading) is accepted; a sample of 50
strata (150 attribute reads per participant) stays refused from 10^6 participants on.

Iterations are capped by the engine (``max_iter``) and taken as a constant factor: the
budget ``ANALYSIS_COST_BUDGET`` is calibrated in seconds per cost unit by
``bench/bench_cost.py`` (``--accepted`` runs the most expensive accepted requests end to
end at 10^6 participants; README, "Cost model").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

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
"""Cost units per participant and attribute read from the database (a cell count in SQL
or a streamed pass): 0.6 microseconds at the budget's 60 microseconds per unit, above the
0.12-0.43 microseconds bench/bench_cost.py --accepted measures at 10^6 participants and
the 0.2-0.35 bench/bench_scale.py measured end to end at 10^7 (README, "Cost model").
It was 0.05 (3 microseconds), which refused every analysis at 10^7."""


def _keys_of(conditions: Sequence[ConditionSpec]) -> list[str]:
    return list(dict.fromkeys(c.attribute for c in conditions))


def reads(request: AnalysisRequest) -> int:
    """Participant-attribute reads of a request: one per attribute of every SQL cell count
    (the fit's table, every judged group) and of every streamed pass of a sample.

    The fits' cost does not grow with the participants (the tables are counted in SQL);
    the reading does, and dominates requests with many groups at 10^6 (a sample of 50
    strata counts 50 groups and streams the participants 50 times).
    """
    params, kind = request.params, request.kind
    where = list(params.where)
    where_keys = _keys_of(where)
    named = ([request.attribute] if request.attribute else []) + where_keys
    attributes = 0
    if kind.streams:
        strata = [[*where, *s.where] for s in params.strata]
        attributes += 2 * len(where_keys)  # the pool judged, then its posterior
        every = len(dict.fromkeys([*named, *(k for s in strata for k in _keys_of(s))]))
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
    return int(READ_UNITS * reads(request)) + int(FIGURE3_UNITS * assignments(request))


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
    models: dict[str, Model] = {
        key: "lattice"
        for key, question in request.questions.items()
        if not question.is_discrete and question.step is not None
    }
    models.update(whole_number_models(request))
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


def check_cost(request: AnalysisRequest) -> int:
    """Refuse a request whose estimated cost exceeds ``ANALYSIS_COST_BUDGET``; returns the cost."""
    return check_budget(fit_cost(request), _reading_cost(request))


def check_budget(fits: int, reading: int) -> int:
    """Refuse a cost of ``fits`` + ``reading`` units above ``ANALYSIS_COST_BUDGET`` (a 400
    giving both); returns the cost. Kinds that price themselves call it too."""
    budget = int(settings.ANALYSIS_COST_BUDGET)
    cost = fits + reading
    if cost > budget:
        raise AnalysisInputError(
            {
                "where": Message(
                    gettext_noop(
                        "this analysis would cost about %(cost)s units (%(fits)s for joint-table "
                        "cells x fits, %(reading)s for reading the participants' answers), above "
                        "the budget of %(budget)s (ANALYSIS_COST_BUDGET); use fewer conditions, "
                        "strata or attributes with fewer categories"
                    ),
                    {
                        "cost": f"{cost:,}",
                        "fits": f"{fits:,}",
                        "reading": f"{cost - fits:,}",
                        "budget": f"{budget:,}",
                    },
                )
            }
        )
    return cost


# --------------------------------------------------------------------------- panels

PANEL_N_BOOT = 100
"""Bootstrap replicates behind a panel's intervals (``select_panel``'s ``n_boot``)."""


def panel_cost(request: AnalysisRequest) -> int:
    """The estimated cost of a panel (issue 14), in the same units plus the solver's.

    - fits: the eligible pool and each quota category within it are counted with an
      interval (``N_BOOT`` replicates), then the eligibility and every quota are refitted
      for the posteriors (``PANEL_N_BOOT`` replicates), each over the joint table of its
      attributes;
    - posteriors: ``participants x (quotas + 1) x PANEL_N_BOOT`` per-candidate
      replicates are held in memory;
    - solver: every pricing problem is a MILP over the candidate *types* (distinct
      reported cells of the quota attributes, at most the participants) with the panel
      size as its scale, ``size x types x (quotas + 1)``.

    The weights are not calibrated by ``bench/bench_cost.py`` (bench/bench_panel.py
    times the solver); they keep a panel of 100 from a pool of 10,000 on a few
    attributes within the budget and refuse panels of thousands over fine-grained types.
    """
    params: Any = request.params  # the panel's request (reconstruction/kinds/panel.py)
    where = list(params.where)
    quotas = list(params.quotas)
    n = max(int(request.participants), 1)
    where_keys = list(dict.fromkeys(c.attribute for c in where))
    total = 0
    if where:
        total += fit_cells(request.questions, where_keys, where) * (1 + N_BOOT + PANEL_N_BOOT)
    quota_keys: list[str] = []
    for quota in quotas:
        conditions = [*where, *quota.where]
        keys = list(dict.fromkeys(c.attribute for c in conditions))
        total += fit_cells(request.questions, keys, conditions) * (1 + N_BOOT + PANEL_N_BOOT)
        quota_keys += [c.attribute for c in quota.where]
    total += n * (len(quotas) + 1) * PANEL_N_BOOT // 10
    type_keys = list(dict.fromkeys(quota_keys))
    types = min(n, fit_cells(request.questions, type_keys, []) if type_keys else 1)
    total += int(params.size or 0) * types * (len(quotas) + 1)
    return int(total)


def check_panel_cost(request: AnalysisRequest) -> int:
    """Refuse a panel whose estimated cost exceeds ``ANALYSIS_COST_BUDGET``; returns it."""
    budget = int(settings.ANALYSIS_COST_BUDGET)
    cost = panel_cost(request)
    if cost > budget:
        raise AnalysisInputError(
            {
                "size": Message(
                    gettext_noop(
                        "this panel would cost about %(cost)s units (fits, posteriors and the "
                        "solver's panel size x candidate types), above the budget of %(budget)s "
                        "(ANALYSIS_COST_BUDGET); ask for a smaller panel, fewer quotas or quotas "
                        "on attributes with fewer categories"
                    ),
                    {"cost": f"{cost:,}", "budget": f"{budget:,}"},
                )
            }
        )
    return cost
