"""The entry point of panel selection, stage by stage.

Pure module: numpy and scipy only.

:func:`select_panel` runs the stages of Flanigan, Gölz, Gupta, Hennig and Procaccia,
"Fair algorithms for selecting citizens' assemblies", Nature 596 (2021), adapted to
distorted attributes (:mod:`reconstruction.algorithms.panel`):

1. posteriors and the eligible pool (:func:`~.posteriors._candidate_pool`, the joint
   reconstruction of 001_28af1923c784b480.txt, Figure 2 and Section IV-B);
2. candidate types and the feasibility check, with the refusal's diagnosis
   (:func:`~.feasibility._types_problem`);
3. optionally, bands tightened for the realised count (:func:`~.bands._tightened_bands`);
4. the maximin / LEXIMIN / Nash optimisation (:func:`~.maximin.optimise`);
5. the lottery and the draw (:func:`~.lottery._draw_panel`, Flanigan, Kehne and
   Procaccia 2021), then what the panel holds per quota and the notes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from privacy.mechanisms.messages import Note, gettext_noop
from reconstruction.algorithms.panel import limits
from reconstruction.algorithms.panel.bands import _tightened_bands
from reconstruction.algorithms.panel.feasibility import _types_problem
from reconstruction.algorithms.panel.lottery import _draw_panel, guarantee_statement
from reconstruction.algorithms.panel.maximin import _Optimum, optimise
from reconstruction.algorithms.panel.posteriors import _candidate_pool, _quota_outcomes
from reconstruction.algorithms.panel.results import (
    PanelOptions,
    PanelResult,
    Progress,
    Quota,
)
from reconstruction.algorithms.queries import Attribute, Condition, table_size
from reconstruction.algorithms.uncertainty import default_rng

_DEFAULTS = PanelOptions()


def select_panel(
    table: Mapping[str, Attribute],
    size: int,
    quotas: Sequence[Quota],
    where: Sequence[Condition] = (),
    *,
    options: PanelOptions = _DEFAULTS,
    rng: np.random.Generator | None = None,
    progress: Progress | None = None,
    **changes: Any,
) -> PanelResult:
    """Draw a panel from a fair lottery whose panels meet quotas on expected true counts.

    Flanigan et al., "Fair algorithms for selecting citizens' assemblies", Nature 2021,
    adapted to distorted attributes as the module docstring explains: posteriors from the
    joint reconstruction of 001_28af1923c784b480.txt (Figure 2's EM over the product
    channel, Section IV-B's participant sampling), quotas on the sums of posteriors,
    candidates grouped into types, maximin/Nash/LEXIMIN by column generation with HiGHS,
    then a uniform lottery over ``lottery_size`` panels (Flanigan, Kehne and Procaccia
    2021) from which ``rng`` draws one; within a type the seats go to candidates drawn
    uniformly with the same ``rng``.

    Parameters
    ----------
    table : mapping of name -> DiscreteAttribute | ContinuousAttribute
    size : int
        Panel size.
    quotas : sequence of Quota
    where : sequence of Condition
        Eligibility (a conjunction); candidates with ``Pr(where | reported) >=
        eligibility_threshold`` form the pool.
    options : PanelOptions
        ``reserves``, ``objective``, ``lottery_size``, ``eligibility_threshold``,
        ``n_boot``, ``tol``, ``max_iter``, ``max_outside``, ``max_seconds``, ``merge`` and
        ``max_rounds`` (see :class:`~.results.PanelOptions`).
    rng : numpy.random.Generator
        The lottery's randomness (seeded from the request's seed) and the bootstrap's.
    progress : callable(float), optional
        Called with the fraction done; it may raise (for example
        :class:`~.results.PanelCancelled`) to stop the run, and the exception propagates
        unchanged.
    **changes
        Fields of :class:`~.results.PanelOptions` given as keywords, shorthand for
        ``dataclasses.replace(options, **changes)``.

    Returns
    -------
    PanelResult

    Raises
    ------
    InfeasibleQuotas
        No panel's expected true counts meet the quotas.
    ValueError
        Bad sizes or options, quotas whose bounds cannot hold for any panel size, unknown
        attributes or bad conditions, a panel larger than the eligible pool.
    """
    if changes:
        options = dataclasses.replace(options, **changes)
    started = limits.now()
    n = table_size(table)
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    quotas = [
        q if q.label else Quota(q.where, q.min, q.max, f"quota {j}") for j, q in enumerate(quotas)
    ]
    for quota in quotas:
        if quota.min > size:
            raise ValueError(f"{quota.label}: min {quota.min} is larger than the panel size {size}")
    generator = default_rng(rng)
    max_seconds = options.max_seconds

    pool = _candidate_pool(table, size, quotas, where, options, generator)
    if progress is not None:
        progress(0.05)
    deadline = None if max_seconds is None else started + float(max_seconds)
    types = _types_problem(pool.matrix, quotas, size, options, deadline)
    notes: list[str] = []
    if types.unmerged:
        notes.append(
            Note(
                gettext_noop(
                    "the wall-clock safety net (max_seconds=%(max_seconds)s) stopped the check "
                    "of the quotas on merged candidate types, so the lottery was built over "
                    "exact types instead"
                ),
                max_seconds=f"{max_seconds:g}",
            )
        )
    problem, levels, cut, tightened = _tightened_bands(
        types.problem,
        pool.posteriors,
        pool.candidates,
        types.type_of,
        quotas,
        size,
        options,
        deadline,
    )
    notes.extend(tightened)

    found = optimise(problem, options.objective, progress, deadline, options.max_rounds)
    sizes = problem.sizes
    drawn = _draw_panel(
        found.weights,
        found.cg.columns,
        sizes,
        types.type_of,
        options.lottery_size,
        options.reserves,
        generator,
    )
    candidates = pool.candidates
    probabilities = np.zeros(n)
    probabilities[candidates] = drawn.type_probability[types.type_of]
    rows = candidates[drawn.panel]
    outcomes = _quota_outcomes(quotas, pool, rows, levels, size)
    eligibility = pool.eligibility
    expected_eligible = (
        float(size) if eligibility is None else float(eligibility.values[rows].sum())
    )
    if progress is not None:
        progress(1.0)
    unselectable = _stop_notes(found, sizes, options, notes, clocked=cut or types.unmerged)
    return PanelResult(
        rows=np.sort(rows).astype(np.intp),
        reserves=candidates[drawn.reserves],
        probabilities=probabilities,
        candidates=candidates,
        quotas=tuple(outcomes),
        objective=options.objective,
        optimum=found.optimum,
        lottery_size=int(options.lottery_size),
        lottery_draw=drawn.draw,
        pool_estimate=pool.estimate,
        pool_ci95=pool.ci95,
        expected_eligible=expected_eligible,
        unselectable=unselectable,
        iterations=found.cg.iterations,
        type_of=types.type_of,
        type_posteriors=types.type_posteriors,
        support=drawn.support,
        weights=drawn.weights,
        guarantee=guarantee_statement(
            int(size),
            len(quotas),
            eligibility=eligibility is not None,
            max_outside=options.max_outside,
        ),
        notes=tuple(notes),
        lp_bound=found.bound,
    )


def _stop_notes(
    found: _Optimum,
    sizes: NDArray[np.float64],
    options: PanelOptions,
    notes: list[str],
    *,
    clocked: bool,
) -> int:
    """Append the notes on where the optimisation stopped and who cannot be selected;
    return the number of unselectable candidates. ``clocked``: the safety net stopped an
    earlier stage (the tightened bands, the check of merged types)."""
    cg, optimum, selectable = found.cg, found.optimum, found.selectable
    objective, max_seconds = options.objective, options.max_seconds
    if cg.stopped and not cg.clock:  # the work limit: reproducible
        if objective == "maximin" and math.isfinite(cg.bound):
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after %(rounds)s rounds (the work "
                        "limit): the lowest selection probability reached is %(optimum)s; no "
                        "lottery can give everyone more than %(bound)s"
                    ),
                    rounds=cg.iterations,
                    optimum=f"{optimum:.4g}",
                    bound=f"{cg.bound:.4g}",
                )
            )
        else:
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after %(rounds)s rounds (the work "
                        "limit): the lowest selection probability reached is %(optimum)s"
                    ),
                    rounds=cg.iterations,
                    optimum=f"{optimum:.4g}",
                )
            )
    elif cg.stopped:
        if objective == "maximin" and math.isfinite(cg.bound):
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after max_seconds=%(max_seconds)s: the lowest "
                        "selection probability reached is %(optimum)s; no lottery can give "
                        "everyone more than %(bound)s"
                    ),
                    max_seconds=f"{max_seconds:g}",
                    optimum=f"{optimum:.4g}",
                    bound=f"{cg.bound:.4g}",
                )
            )
        else:
            notes.append(
                Note(
                    gettext_noop(
                        "optimisation stopped after max_seconds=%(max_seconds)s: the lowest "
                        "selection probability reached is %(optimum)s"
                    ),
                    max_seconds=f"{max_seconds:g}",
                    optimum=f"{optimum:.4g}",
                )
            )
    unselectable = int(sizes[~selectable].sum())
    if cg.uncovered is not None and not cg.clock:
        unreached = int(sizes[cg.uncovered].sum())
        notes.append(
            Note(
                gettext_noop(
                    "%(unreached)s eligible candidate(s) were in no panel found within the "
                    "work limit of %(rounds)s rounds (selection probability 0)"
                ),
                unreached=unreached,
                rounds=cg.iterations,
            )
        )
        unselectable -= unreached
    elif cg.uncovered is not None:
        unreached = int(sizes[cg.uncovered].sum())
        notes.append(
            Note(
                gettext_noop(
                    "%(unreached)s eligible candidate(s) were in no panel found within "
                    "max_seconds=%(max_seconds)s (selection probability 0)"
                ),
                unreached=unreached,
                max_seconds=f"{max_seconds:g}",
            )
        )
        unselectable -= unreached
    if cg.clock or clocked:
        notes.append(
            Note(
                gettext_noop(
                    "the wall-clock safety net (max_seconds=%(max_seconds)s) stopped this run "
                    "before its work limit: where it stops depends on the machine's load, so "
                    "this draw may not be reproducible from its seed"
                ),
                max_seconds=f"{max_seconds:g}",
            )
        )
    if unselectable:
        notes.append(
            Note(
                gettext_noop(
                    "%(unselectable)s eligible candidate(s) fit in no quota-satisfying panel "
                    "found (selection probability 0)"
                ),
                unselectable=unselectable,
            )
        )
    return unselectable
