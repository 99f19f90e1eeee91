"""Reconstruction of continuous attributes over intervals (AS and EM).

Pure package: numpy and scipy only.

001_28af1923c784b480.txt, Sections III-B2 (AS, Figure 1, equation (3)) and III-B3 (EM)
reconstruct the distribution of a continuous attribute ``X`` from ``w = x + y`` where the
noise ``Y`` has a known density. Following the complexity reduction of [10] and the channel
idea of /work/shared/design/architecture.md, the declared range is cut into intervals, the
reported values are binned, and equation (3) becomes the fixed point

    N_i  <-  sum_j  c_j * C[i, j] N_i / sum_l C[l, j] N_l

on the reported bin counts ``c`` with ``C = noise.interval_channel(true_edges,
reported_edges)``. AS and EM share this update and differ in their stopping rule (see
:func:`fixed_point`). Section IV-A1 asks for intervals that begin/end at a query's
thresholds: :func:`interval_edges` always includes them.

Run to convergence, EM reaches the nonparametric maximum-likelihood estimate, which for
smooth noise (Gaussian, Laplace) concentrates its mass in spikes and moves mass across
thresholds. By default EM therefore runs as EMS (Silverman, Jones, Wilson and Nychka,
J. R. Statist. Soc. B 52 (1990) 271-324): every EM step is followed by a light smoothing
of the estimated density along each continuous attribute (:func:`smoothing_matrix`),
and the iteration runs to the fixed point of this smoothed map. The fixed point does not
depend on the starting point, so bootstrap replicates can be warm-started at it.

Where each method lives
-----------------------
=================  ==================================================================
module             paper names and functions
=================  ==================================================================
``em``             the EM/AS fixed point (001, III-B2/3, Figure 2) over a product of
                   channels, EMS smoothing: :func:`fixed_point`,
                   :func:`smoothing_matrix`, :func:`default_smoothing`
``intervals``      intervals with the thresholds as edges (001, III-B2, IV-A1):
                   :func:`interval_edges`, :func:`interval_count`,
                   :func:`reported_edges`, :func:`bin_values`, :func:`noise_scale`
``lattice``        true values on a lattice: :func:`lattice_points`,
                   :func:`lattice_cells`, :func:`lattice_cut`
``axis``           one attribute's model for a query: :func:`axis_model`
``whole_numbers``  whether reports show whole numbers: :func:`whole_number_step`,
                   :func:`whole_number_evidence`, :func:`half_unit_evidence`
``reconstruct``    AS and EM for one attribute: :func:`reconstruct_continuous`,
                   :func:`reconstruct_bins`, :class:`IntervalReconstruction`
=================  ==================================================================
"""

from reconstruction.algorithms.continuous.axis import AxisModel, axis_model
from reconstruction.algorithms.continuous.em import (
    DEFAULT_SMOOTHING,
    default_smoothing,
    fixed_point,
    smoothing_matrix,
)
from reconstruction.algorithms.continuous.intervals import (
    bin_values,
    interval_count,
    interval_edges,
    noise_scale,
    reported_edges,
)
from reconstruction.algorithms.continuous.lattice import (
    LATTICE_SMOOTHING,
    MAX_LATTICE_CELLS,
    LatticeCells,
    lattice_cells,
    lattice_cut,
    lattice_points,
)
from reconstruction.algorithms.continuous.reconstruct import (
    IntervalReconstruction,
    reconstruct_bins,
    reconstruct_continuous,
)
from reconstruction.algorithms.continuous.whole_numbers import (
    WholeNumberEvidence,
    half_unit_evidence,
    whole_number_evidence,
    whole_number_step,
    whole_numbers_testable,
    whole_threshold_note,
)

__all__ = [
    "DEFAULT_SMOOTHING",
    "LATTICE_SMOOTHING",
    "MAX_LATTICE_CELLS",
    "AxisModel",
    "IntervalReconstruction",
    "LatticeCells",
    "WholeNumberEvidence",
    "axis_model",
    "bin_values",
    "default_smoothing",
    "fixed_point",
    "half_unit_evidence",
    "interval_count",
    "interval_edges",
    "lattice_cells",
    "lattice_cut",
    "lattice_points",
    "noise_scale",
    "reconstruct_bins",
    "reconstruct_continuous",
    "reported_edges",
    "smoothing_matrix",
    "whole_number_evidence",
    "whole_number_step",
    "whole_numbers_testable",
    "whole_threshold_note",
]
