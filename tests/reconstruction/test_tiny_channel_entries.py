"""Channel entries between 0 and 1e-12 are refused at POST (issue 27, item 4: an entry of
5e-324 left the job running for ever), in an aggregate reconstruction's channel as in a
question's randomised-response matrix (tests/surveys/test_reporting_grid.py)."""

from __future__ import annotations

import pytest

from reconstruction.models import AggregateReconstruction
from tests.factories import client_for, key_factory, organisation_factory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("tiny", [5e-324, 1e-13])
def test_an_aggregate_channel_entry_below_1e_12_is_a_400_naming_the_channel(tiny):
    client = client_for(key_factory(organisation_factory(), "analyst")[1])
    response = client.post(
        "/api/v1/aggregate-reconstructions/",
        {"counts": [60, 40], "channel": [[1 - tiny, tiny], [0.3, 0.7]]},
        format="json",
    )
    assert response.status_code == 400, response.json()
    assert "at least 1e-12" in str(response.json()["errors"]["channel"])
    assert not AggregateReconstruction.objects.exists()


def test_zero_and_ordinary_entries_are_accepted():
    client = client_for(key_factory(organisation_factory(), "analyst")[1])
    response = client.post(
        "/api/v1/aggregate-reconstructions/",
        {"counts": [60, 40], "channel": [[1.0, 0.0], [0.3, 0.7]]},
        format="json",
    )
    assert response.status_code == 202, response.json()
