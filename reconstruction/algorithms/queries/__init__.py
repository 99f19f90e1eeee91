"""Queries over a table of distorted attributes: counts, means, distributions, sampling.

Pure package: numpy and scipy only.

001_28af1923c784b480.txt, Section IV defines the tasks: the number of participants that
meet a conjunctive condition (Section IV-A1, Figure 3), means (IV-A2), distributions, and
participant sampling (IV-B). This package implements them as the document defines them
(``method="figure3"``) and adds estimators that reconstruct the attributes jointly
(``joint``, ``unbiased``, ``posterior``), all on one core: the joint model over reported
cells (:mod:`.cells`). The array API (a table of rows: :func:`count_joint`,
:func:`mean`, :func:`distribution`, :func:`sample`) counts its rows' cells and calls the
same code as the entry points for tables counted elsewhere, in SQL
(:func:`count_from_table`, :func:`mean_from_table`, :func:`distribution_from_table`,
:func:`posterior_from_table`), so both give the same answers.

Where each method lives
-----------------------
=================  ==================================================================
module             paper names and functions
=================  ==================================================================
``conditions``     the table (:class:`DiscreteAttribute`, :class:`ContinuousAttribute`,
                   their specifications), subconditions ``c_i`` (:class:`Condition`,
                   001 Section IV-A1), :func:`satisfies`, :func:`condition_label`
``cells``          the joint model: :func:`plan_cells`, :func:`cell_table`, the EM of
                   001 Figure 2 over the product channel, its bootstrap and posteriors
``counts``         ``N_{c_1 and ... and c_m}``: :func:`count_joint`,
                   :func:`count_from_table`, :func:`averaged_count`,
                   :func:`whole_number_weight`, :func:`count_naive`, :func:`count`
``figure3``        001 Figure 3 (ARVeSNA / sorted assignment per stage):
                   :func:`figure3_rows`, :func:`count_figure3`
``means``          001 Section IV-A2: :func:`mean`, :func:`mean_from_table`,
                   :func:`moments_mean`, :func:`naive_mean_from_moments`,
                   :func:`linear_noise`
``distributions``  EM/AS overall (001 Figure 2, III-B2/3), joint EM within a group:
                   :func:`distribution`, :func:`distribution_from_table`
``posteriors``     ``Pr(condition | reported cell)``: :func:`condition_posterior(s)
                   <condition_posteriors>`, :func:`posterior_from_table`
``sampling``       001 Section IV-B: :func:`sample`, :class:`TopCandidates`
``results``        :class:`CountResult`, :class:`MeanResult`, :class:`SampleResult`
=================  ==================================================================

ARVeSNA and the sorted assignment themselves are in
:mod:`reconstruction.algorithms.assignment`; EM/AS and EQ for one nominal attribute in
:mod:`reconstruction.algorithms.discrete`; interval reconstruction of one continuous
attribute in :mod:`reconstruction.algorithms.continuous`.
"""

from reconstruction.algorithms.queries.cells import (
    CellPlan,
    CellTable,
    cell_index,
    cell_table,
    flat_cells,
    plan_cells,
)
from reconstruction.algorithms.queries.cells import (
    _whole_number_note as _whole_number_note,  # reconstruction/analysis.py reads it
)
from reconstruction.algorithms.queries.conditions import (
    Attribute,
    Condition,
    ContinuousAttribute,
    ContinuousSpec,
    DiscreteAttribute,
    DiscreteSpec,
    Spec,
    condition_label,
    satisfies,
    spec_of,
    table_size,
)
from reconstruction.algorithms.queries.counts import (
    averaged_count,
    averaged_count_from_tables,
    count,
    count_from_table,
    count_joint,
    count_naive,
    naive_count_result,
    whole_number_weight,
)
from reconstruction.algorithms.queries.distributions import (
    distribution,
    distribution_from_table,
)
from reconstruction.algorithms.queries.figure3 import count_figure3, figure3_rows
from reconstruction.algorithms.queries.means import (
    linear_noise,
    mean,
    mean_from_table,
    moments_mean,
    naive_mean_from_moments,
)
from reconstruction.algorithms.queries.posteriors import (
    ConditionPosterior,
    condition_posterior,
    condition_posteriors,
    posterior_from_table,
)
from reconstruction.algorithms.queries.results import CountResult, MeanResult, SampleResult
from reconstruction.algorithms.queries.sampling import TopCandidates, sample

__all__ = [
    "Attribute",
    "CellPlan",
    "CellTable",
    "Condition",
    "ConditionPosterior",
    "ContinuousAttribute",
    "ContinuousSpec",
    "CountResult",
    "DiscreteAttribute",
    "DiscreteSpec",
    "MeanResult",
    "SampleResult",
    "Spec",
    "TopCandidates",
    "averaged_count",
    "averaged_count_from_tables",
    "cell_index",
    "cell_table",
    "condition_label",
    "condition_posterior",
    "condition_posteriors",
    "count",
    "count_figure3",
    "count_from_table",
    "count_joint",
    "count_naive",
    "distribution",
    "distribution_from_table",
    "figure3_rows",
    "flat_cells",
    "linear_noise",
    "mean",
    "mean_from_table",
    "moments_mean",
    "naive_count_result",
    "naive_mean_from_moments",
    "plan_cells",
    "posterior_from_table",
    "sample",
    "satisfies",
    "spec_of",
    "table_size",
    "whole_number_weight",
]
