"""``disclosure.check_answerers`` (issue 26): a result without a condition whose answerers'
count is published perturbed by the cell key is judged on that *published* count's
interval (the published value within 2), not on the true count the start judged. No
database: the rule reads the request's ``min_responses`` and its keys only."""

from __future__ import annotations

import pytest

from privacy.mechanisms import cellkey
from reconstruction import analysis, disclosure
from reconstruction.conditions import Thresholds
from reconstruction.jobs import JobRefused


def _request() -> analysis.AnalysisRequest:
    from reconstruction.kinds import count

    return analysis.AnalysisRequest(
        survey=None,  # type: ignore[arg-type]
        kind=count.KIND,
        params=count.Request(kind="count"),
        questions={},
        where=[],
        strata=[],
        thresholds=Thresholds(min_responses=10, min_cell=5),
    )


def _published_as(true: int, published: int) -> disclosure.GroupSize:
    """An exact group of ``true`` answerers whose key sum publishes it as ``published``
    (the first such key sum of 64 spread over the key's range: deterministic)."""
    sums = (j * (cellkey.KEY_MODULUS // 64) for j in range(64))
    key_sum = next(k for k in sums if cellkey.perturbed_count(true, k) == published)
    size = disclosure.GroupSize.counted(true, key_sum=key_sum)
    assert size.published == published
    return size


def test_eleven_answerers_published_as_nine_are_refused_with_the_starts_reason() -> None:
    # 9 within 2 is [7, 11]: it does not show 10 or more, although the truth (11) does.
    # The reason is the start's own for the interval's low end (7), naming no number
    # below the threshold.
    request = _request()
    with pytest.raises(JobRefused) as refused:
        disclosure.check_answerers(request, _published_as(11, 9))
    expected = analysis.too_few_responses(request, 7)
    assert expected is not None
    assert str(refused.value.reason) == str(expected)
    assert "fewer than 10" in str(refused.value.reason)
    assert "7" not in str(refused.value.reason) and "9" not in str(refused.value.reason)


def test_a_published_count_whose_interval_reaches_the_threshold_passes() -> None:
    # 12 within 2 is [10, 12 + 2]: at least 10 whatever the perturbation was.
    disclosure.check_answerers(_request(), _published_as(11, 12))


def test_an_unperturbed_count_is_left_to_the_start() -> None:
    # Without a key sum nothing is published perturbed: the start judged the true count
    # already, and this rule refuses nothing (even an interval below the threshold).
    disclosure.check_answerers(_request(), disclosure.GroupSize(9.0, 5.0, 12.0, False))
    disclosure.check_answerers(_request(), disclosure.GroupSize.counted(3))
