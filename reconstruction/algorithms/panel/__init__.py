"""Fair panel selection (sortition) with quotas on privacy-preserved attributes.

Pure package: numpy and scipy only (HiGHS through :mod:`scipy.optimize`).

001_28af1923c784b480.txt, Section IV-B draws the participants of a deliberative
consultation from the candidates that meet a condition. Citizens' assemblies add quotas
("14-16 women, 5-9 aged 16-29") and ask for a lottery whose selection probabilities are
known and as equal as the quotas allow. The reference method is Flanigan, Gölz, Gupta,
Hennig and Procaccia, "Fair algorithms for selecting citizens' assemblies", Nature 596,
548-552 (2021): find a probability distribution over quota-satisfying panels that
maximises the smallest selection probability (maximin), the product of the probabilities
(Nash welfare) or the whole sorted vector of probabilities (LEXIMIN), by column generation
over panels, then draw one panel from it. Flanigan, Kehne and Procaccia, "Fair sortition
made transparent" (NeurIPS 2021), round that distribution to a uniform lottery over ``m``
panels so that the draw can be shown in public.

Where and why this module differs from Flanigan et al.
------------------------------------------------------
* **Attributes are distorted.** Flanigan et al. see every candidate's true features. Here
  a candidate has only a *posterior* probability of each quota category: ``p[i, j] =
  Pr(candidate i truly meets quota j's condition | i's reported values)``, computed from
  the joint reconstruction of the quota's attributes exactly as ``posterior`` sampling in
  :mod:`reconstruction.algorithms.queries` computes it (EM over the product channel,
  continuous attributes cut into intervals, so age bands come from noisy ages). A quota
  ``min <= count <= max`` is imposed on the panel's **expected true count** ``sum_{i in
  panel} p[i, j]``. The realised true count is random (a Poisson-binomial variable), so
  the quotas hold in expectation only; :class:`QuotaOutcome` gives the 95% interval.
* **Bands tightened for the variance of the true count.** Given the reported answers, a
  panel's true count in a quota is a sum of independent Bernoulli variables whose mean
  and variance are both linear in the seats. Keeping the *expected* count in the band
  still lets the realised count fall outside it by about a seat at strong distortion, so
  every panel of the lottery must also keep the expected number of seats outside each
  band at most ``max_outside`` (normal approximation, the margin's tangent in the
  variance making it one more linear row of the MILPs, see :func:`_tightened`). Flanigan
  et al. need nothing of the kind: their counts are exact.
* **Types instead of people.** Candidates whose posterior vectors are equal (the same
  reported cells) are interchangeable, so the panels are vectors of seats per *type* and
  the linear programmes have one row per type, not per person. Within a type the seats go
  to candidates drawn uniformly at random with the request's seed, which keeps every
  candidate of a type at the same probability (any optimal distribution can be
  symmetrised this way, so nothing is lost). This is what makes pools of 10,000 solvable
  in minutes with HiGHS where the per-person formulation takes hours.
* **Near-equal types merged.** A continuous attribute gives nearly every reported value
  its own posterior, so candidates whose posteriors differ by at most ``min(0.05, 0.5 /
  size)`` per quota are merged (:func:`_merge_types`). Unlike an approximation, this
  cannot break a band: the lower edge is imposed on the type's smallest member posterior
  and the upper edge on its largest, so any members filling the seats keep every
  panel's expected counts within the bands; the cost is at most half a seat of band in
  total and some fairness (the test bounds it). ``merge=False`` turns it off.
* **A relaxation bound and a rounded warm start.** Flanigan et al. start the column
  generation from a covering set of panels and stop on the pricing MILP's dual bound.
  Here the LP relaxation over types (fractional expected seats per type, maximin
  level ``z`` with ``x_t >= z n_t``, :func:`_lp_bound`) bounds the optimum from above
  before any MILP, and hundreds of panels rounded from its seats (systematic rounding
  along types sorted by posteriors, quotas repaired by one-seat moves,
  :func:`_warm_start`) seed the master LP, so it starts near the optimum. The stopping
  rule is sortition-algorithms' own: a gap of 0.0005 in selection probability to the
  best proven bound (the relaxation's or a pricing MILP's), or 0.2% if larger.
* **LEXIMIN without Gurobi.** The LEXIMIN of Flanigan et al. solves a sequence of
  maximin programmes, fixing the probabilities whose dual values are positive; it runs
  here with HiGHS' LP solver (the reference implementation requires Gurobi). Nash welfare
  is maximised by fully corrective Frank-Wolfe steps over the panels found so far (the
  master problem is a mixture-weight likelihood, solved by its EM fixed point), instead
  of a conic solver.
* **Eligibility** (``where``) is also uncertain: candidates whose posterior probability
  of meeting it is at least ``eligibility_threshold`` (0.5) enter the pool; the result
  states how many panel members are expected to meet it truly.

Entry point: :func:`select_panel`; infeasible quotas raise :class:`InfeasibleQuotas` with
the conflicting quotas and the smallest feasible relaxation.

Where each stage lives
----------------------
=====================  ==============================================================
module                 what it holds (paper names)
=====================  ==============================================================
``results``            :class:`Quota`, :class:`PanelOptions`, :class:`PanelResult`,
                       :class:`QuotaOutcome`, :class:`InfeasibleQuotas`
``selection``          :func:`select_panel`: the stages in order
``posteriors``         posteriors of the quota categories and eligibility (001, Figure 2
                       and Section IV-B), types (:func:`~.posteriors._merge_types`), the
                       intervals of realised counts
``types``              the types counted from occupied reported cells (the request's
                       check, reconstruction/cost.py)
``problem``            the panel problem over types and its feasibility MILP
``feasibility``        relaxation and diagnosis: conflicting quotas, smallest relaxation
``bands``              bands tightened for the realised count (``max_outside``)
``warm_start``         the LP relaxation's bound and the panels rounded from it
``maximin``            master LP and pricing MILP: maximin, LEXIMIN, Nash (Flanigan et
                       al. 2021, Methods)
``lottery``            rounding to ``m`` panels and the draw (Flanigan, Kehne and
                       Procaccia 2021); :func:`guarantee_statement`
``limits``             the deterministic work limits and the wall-clock safety net
=====================  ==============================================================
"""

from reconstruction.algorithms.panel.lottery import guarantee_statement
from reconstruction.algorithms.panel.results import (
    OBJECTIVES,
    InfeasibleQuotas,
    Objective,
    PanelCancelled,
    PanelOptions,
    PanelResult,
    Quota,
    QuotaOutcome,
    TooManyTypes,
)
from reconstruction.algorithms.panel.selection import select_panel

__all__ = [
    "OBJECTIVES",
    "InfeasibleQuotas",
    "Objective",
    "PanelCancelled",
    "PanelOptions",
    "PanelResult",
    "Quota",
    "QuotaOutcome",
    "TooManyTypes",
    "guarantee_statement",
    "select_panel",
]
