"""Accuracy metrics: 001 III-B1, the error formula of 000/003, and 004 Section 5.2."""

import numpy as np
import pytest
from numpy.testing import assert_allclose

from reconstruction.algorithms.metrics import (
    d_value,
    information_loss,
    reconstruction_error,
    relative_accuracy,
    rmse,
)


def test_information_loss_is_half_the_l1_distance() -> None:
    assert_allclose(information_loss([1, 1], [1, 1]), 0.0, atol=0)
    assert_allclose(information_loss([1, 0], [0, 1]), 1.0, atol=0)  # no overlap
    assert_allclose(information_loss([30, 70], [0.5, 0.5]), 0.2, atol=1e-15)


def test_reconstruction_error_of_000_question_8() -> None:
    # 000 Table 1, question 8, NStoPS: t = 100 - 2 r; the error formula gives 0.3206 (Table
    # 4 prints 0.32089732 from the unrounded data).
    truth = np.array([40.0, 54.6, 5.4])
    estimate = 100 - 2 * np.array([24.2, 15.5, 60.4])
    assert_allclose(reconstruction_error(estimate, truth), 0.3206, atol=5e-4)


def test_rmse_and_relative_accuracy_of_004() -> None:
    assert_allclose(rmse([1, 2, 3], [1, 2, 7]), np.sqrt(16 / 3), rtol=1e-15)
    assert_allclose(relative_accuracy(10_500, 10_000), 0.95, rtol=1e-15)  # 004's example
    assert_allclose(relative_accuracy(9_500, 10_000), 0.95, rtol=1e-15)
    with pytest.raises(ValueError, match="positive true answer"):
        relative_accuracy(3, 0)


def test_d_value_is_the_largest_cdf_gap() -> None:
    assert_allclose(d_value([1, 1, 1, 1], [1, 1, 1, 1]), 0.0, atol=0)
    assert_allclose(d_value([1, 0, 0, 0], [0, 0, 0, 1]), 1.0, atol=0)
    # Moving 2 of 7 participants across a boundary gives 2/7 = 0.2857 (004's figure value).
    assert_allclose(d_value([3, 2, 2, 0], [1, 2, 2, 2]), 2 / 7, rtol=1e-12)


def test_metrics_refuse_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="one shape"):
        rmse([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="non-negative"):
        information_loss([-1, 2], [1, 1])
