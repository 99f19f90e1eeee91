"""A change and the before question's distribution, judged together by the query audit
(issue 29's last trade-off), on a larger consultation in process (no database): the
engine's fits, the kinds' publish and published, and the audit itself.

20,000 residents answered both surveys, k = 5, randomised response (retain 0.7), as
``bench_change_scale`` at 1/50 of its size. On the old code the audit judged the
residents who answered before only per category on the worst case of the row's
transition cells (the shares before were not boxes) and refused the second analysis in
either order, here as at 10^6. Now the share before times the pairs is the row's total,
and the before-only group is the distribution's count minus it: both are published
when that group is clearly large (4,000 answered before only, about 800 per category)
and the second is still refused when it is not (600, about 120 per category).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from bench.bench_accuracy import change_truth
from privacy.mechanisms.channels import randomised_response
from privacy.mechanisms.distortion import distort_codes
from reconstruction.algorithms.audit import Box, Discrete, Finding, Published, audit
from reconstruction.algorithms.queries import change as engine
from reconstruction.algorithms.queries.conditions import DiscreteAttribute
from reconstruction.algorithms.queries.distributions import distribution
from reconstruction.algorithms.simulation import simulate_transitions
from reconstruction.kinds import change as change_kind
from reconstruction.kinds import distribution as distribution_kind
from surveys.pairs import Unpaired

PAIRED, K, AFTER = 20_000, 5, 2
AFTER_NAME = change_kind.audit_name(AFTER, "support")


def _question(k: int) -> Any:
    categories = [str(c) for c in range(k)]
    return SimpleNamespace(
        categories=categories,
        is_discrete=True,
        n_categories=k,
        mechanism="randomised_response",
        range_low=None,
        range_high=None,
    )


def _published(before_only: int) -> tuple[list[Published], list[Published], int]:
    """The boxes of the change and of the before question's distribution."""
    rng = np.random.default_rng(2029)
    channel = randomised_response(K, 0.7)
    before, after = simulate_transitions(PAIRED + before_only, change_truth(K), rng=rng)
    reported = distort_codes(before, channel, rng)
    reported_after = distort_codes(after[:PAIRED], channel, rng)
    result = engine.change(
        DiscreteAttribute(reported[:PAIRED], channel),
        DiscreteAttribute(reported_after, channel),
        rng=np.random.default_rng(1),
    )
    question = _question(K)
    params = change_kind.Request(kind="change", attribute="support", after=AFTER)
    request = SimpleNamespace(
        params=params,
        thresholds=SimpleNamespace(min_cell=5),
        where=[],
        questions={"support": question, params.after_key: question},
        whole_numbers=[],
    )
    fitted = change_kind.Fitted(request, result, Unpaired(before_only=before_only, after_only=0))
    payload = change_kind.publish(fitted)  # type: ignore[arg-type]
    fit = distribution(
        {"support": DiscreteAttribute(reported, channel)}, "support", rng=np.random.default_rng(2)
    )
    counts = {
        "counts": [float(c) for c in fit.counts],
        "ci95": [[float(low), float(high)] for low, high in fit.ci95],
    }
    questions = {"support": question, AFTER_NAME: change_kind.AfterAnswer(question)}  # type: ignore[arg-type]
    change_boxes = change_kind.published(params, payload, questions)
    distribution_boxes = distribution_kind.published(
        distribution_kind.Request(kind="distribution", attribute="support"), counts, questions
    )
    return change_boxes, distribution_boxes, PAIRED + before_only


def _both_orders(before_only: int) -> tuple[Finding | None, Finding | None]:
    change_boxes, distribution_boxes, population = _published(before_only)
    universe = {"support": Discrete(K), AFTER_NAME: Discrete(K + 1)}
    everyone = Published.exact(Box(), population)
    first = audit(universe, [everyone, *distribution_boxes], change_boxes, 5)
    second = audit(universe, [everyone, *change_boxes], distribution_boxes, 5)
    return first, second


def test_a_change_and_the_before_distribution_are_both_published_in_either_order() -> None:
    assert _both_orders(4_000) == (None, None)


@pytest.mark.parametrize("order", [0, 1])
def test_too_few_answered_before_only_and_the_second_is_refused(order: int) -> None:
    finding = _both_orders(600)[order]
    assert finding is not None
