"""What a question's mechanism does, for the organiser building a survey in the admin.

For one question spec: its channel (``C[i, j] = Pr(reported j | true i)``), its local
differential privacy level ε, and the expected 95% margin of error of the reconstructed
share of each category at ``n`` respondents. The margin is the delta-method standard
error of the matrix-inversion estimate ``π̂ = C^{-T} λ̂`` (000_1b7f9a8e281301b4.txt,
section 3, the NStoPS estimator; 001_28af1923c784b480.txt, section 2 for randomised
response), with reported shares ``λ = C^T π`` multinomial and true shares ``π`` uniform:
``Cov(π̂) = C^{-T} (diag λ - λ λ^T) C^{-1} / n``. For a continuous question it is the
margin of the mean: the true values' spread (uniform on the range) plus the noise's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privacy.mechanisms import CONTINUOUS
from privacy.mechanisms import epsilon as channel_epsilon
from surveys import schemes

Z95 = 1.959964


@dataclass(frozen=True)
class MechanismPreview:
    key: str
    channel: list[list[float]] | None
    categories: list[str]
    epsilon: float | None
    margin: float | None  # share (0-1) for discrete questions, value units for continuous
    respondents: int


def discrete_margin(channel: np.ndarray, n: int) -> float | None:
    """Largest 95% margin over categories of the reconstructed shares, uniform truth."""
    k = channel.shape[0]
    truth = np.full(k, 1.0 / k)
    reported = channel.T @ truth
    try:
        inverse = np.linalg.inv(channel.T)
    except np.linalg.LinAlgError:
        return None
    covariance = inverse @ (np.diag(reported) - np.outer(reported, reported)) @ inverse.T / n
    return float(Z95 * math.sqrt(max(0.0, float(np.max(np.diag(covariance))))))


def continuous_margin(low: float, high: float, name: str, params: dict[str, Any], n: int) -> float:
    spread = (high - low) ** 2 / 12.0
    mechanism = CONTINUOUS.get(name)
    if mechanism is not None and "retain" in mechanism.params:
        # Retention replacement: reported mean = p * true mean + (1 - p) * mid-range; its
        # spread is that of the range, divided by p when the true mean is recovered.
        return float(Z95 * math.sqrt(spread / n) / float(params["retain"]))
    noise = mechanism.noise_variance(params) if mechanism is not None else None
    variance = spread + (noise or 0.0)
    return float(Z95 * math.sqrt(variance / n))


def preview(spec: schemes.QuestionSpec, respondents: int) -> MechanismPreview:
    n = max(1, int(respondents))
    if spec.type == "continuous":
        assert spec.range is not None
        margin = continuous_margin(spec.range[0], spec.range[1], spec.mechanism, spec.params, n)
        eps = schemes.continuous_epsilon(spec.mechanism, spec.params, spec.range, spec.resolution)
        return MechanismPreview(spec.key, None, [], eps, margin, n)
    name = "negative_uniform" if spec.mechanism == "negative_manual" else spec.mechanism
    channel = schemes.discrete_channel(spec.n_categories, name, spec.params)
    eps = channel_epsilon(channel) if spec.mechanism != "none" else None
    return MechanismPreview(
        spec.key,
        np.round(channel, 3).tolist(),
        list(spec.categories),
        eps,
        discrete_margin(channel, n),
        n,
    )
