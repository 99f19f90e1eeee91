"""Privacy mechanisms: channels, noise models, distortion, privacy metrics, disclosure control.

Pure package: numpy and scipy only (no Django, Celery or REST framework).
"""

from privacy.mechanisms.channels import (
    MAX_CONDITION,
    WIDE_CONDITION,
    ChannelConditioning,
    channel_conditioning,
    custom_channel,
    manual_negative,
    negative_gaussian,
    negative_uniform,
    randomised_response,
    require_invertible,
    validate_channel,
    validate_stochastic,
)
from privacy.mechanisms.descriptors import (
    CONTINUOUS,
    DISCRETE,
    Mechanism,
    continuous_mechanism,
    discrete_mechanism,
    noise_model,
    report_sentence,
)
from privacy.mechanisms.disclosure import (
    NonResponseInterval,
    SuppressedCounts,
    group_publishable,
    non_response_interval,
    question_publishable,
    suppress_counts,
)
from privacy.mechanisms.distortion import distort_codes, distort_values
from privacy.mechanisms.metrics import epsilon, privacy_level, privacy_levels
from privacy.mechanisms.noise import (
    AdditiveGaussian,
    AdditiveLaplace,
    AdditiveStaircase,
    AdditiveUniform,
    NoiseModel,
    NoNoise,
    RetentionReplacement,
)

__all__ = [
    "CONTINUOUS",
    "DISCRETE",
    "MAX_CONDITION",
    "WIDE_CONDITION",
    "AdditiveGaussian",
    "AdditiveLaplace",
    "AdditiveStaircase",
    "AdditiveUniform",
    "ChannelConditioning",
    "Mechanism",
    "NoNoise",
    "NoiseModel",
    "NonResponseInterval",
    "RetentionReplacement",
    "SuppressedCounts",
    "channel_conditioning",
    "continuous_mechanism",
    "custom_channel",
    "discrete_mechanism",
    "distort_codes",
    "distort_values",
    "epsilon",
    "group_publishable",
    "manual_negative",
    "negative_gaussian",
    "negative_uniform",
    "noise_model",
    "non_response_interval",
    "privacy_level",
    "privacy_levels",
    "question_publishable",
    "randomised_response",
    "report_sentence",
    "require_invertible",
    "suppress_counts",
    "validate_channel",
    "validate_stochastic",
]
