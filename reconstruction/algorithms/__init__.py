"""Reconstruction algorithms: estimators, uncertainty and accuracy metrics.

Pure package: numpy and scipy only (no Django, Celery or REST framework).
"""

from reconstruction.algorithms.counts import reported_counts, validate_counts
from reconstruction.algorithms.discrete import (
    em_as,
    em_as_batch,
    eq,
    nstops,
    nstops_i,
    nstops_ii,
    nstops_ii_batch,
    nstops_mle,
    project_to_simplex,
    revise_negative_channel,
)
from reconstruction.algorithms.result import Reconstruction
from reconstruction.algorithms.uncertainty import bootstrap_ci, linear_ci

__all__ = [
    "Reconstruction",
    "bootstrap_ci",
    "em_as",
    "em_as_batch",
    "eq",
    "linear_ci",
    "nstops",
    "nstops_i",
    "nstops_ii",
    "nstops_ii_batch",
    "nstops_mle",
    "project_to_simplex",
    "reported_counts",
    "revise_negative_channel",
    "validate_counts",
]

# ---------------------------------------------------------------------------------------
# Modules maintained by the continuous/queries engineer. Their public names come from their
# own ``__all__`` so this block needs no edit when those lists change. (``simulation`` is
# a test-data helper and ``methods`` has no ``__all__`` yet; neither is re-exported.)
from reconstruction.algorithms import assignment, continuous, queries
from reconstruction.algorithms.assignment import *  # noqa: F403
from reconstruction.algorithms.continuous import *  # noqa: F403
from reconstruction.algorithms.queries import *  # noqa: F403

__all__ += [*assignment.__all__, *continuous.__all__, *queries.__all__]
