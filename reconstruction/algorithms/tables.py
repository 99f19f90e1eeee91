"""The engine's entry points for tables of reported cells counted elsewhere (SQL).

Pure module: numpy and scipy only.

The cell tables are the only estimator path: the code lives in
:mod:`reconstruction.algorithms.queries` (the joint model over cells in
:mod:`~reconstruction.algorithms.queries.cells`, the estimators in ``counts``, ``means``,
``distributions``, ``posteriors`` and ``sampling``); this module names its entry points
for the service layer: :func:`plan_cells` turns specifications, a condition and ``n``
into a :class:`CellPlan`, the caller counts the cells (:func:`cell_table` is the numpy
reference of the SQL ``GROUP BY`` with ``width_bucket``) into a :class:`CellTable`, and
:func:`count_from_table`, :func:`mean_from_table`, :func:`distribution_from_table` and
:func:`posterior_from_table` fit it (001_28af1923c784b480.txt, Sections III-B and IV-A).
"""

from reconstruction.algorithms.queries import (
    CellPlan,
    CellTable,
    ContinuousSpec,
    DiscreteSpec,
    Spec,
    TopCandidates,
    averaged_count_from_tables,
    cell_index,
    cell_table,
    count_from_table,
    distribution_from_table,
    flat_cells,
    mean_from_table,
    naive_mean_from_moments,
    plan_cells,
    posterior_from_table,
    spec_of,
)

__all__ = [
    "CellPlan",
    "CellTable",
    "ContinuousSpec",
    "DiscreteSpec",
    "Spec",
    "TopCandidates",
    "averaged_count_from_tables",
    "cell_index",
    "cell_table",
    "count_from_table",
    "distribution_from_table",
    "flat_cells",
    "mean_from_table",
    "naive_mean_from_moments",
    "plan_cells",
    "posterior_from_table",
    "spec_of",
]
