"""Laplace reports through the API: the server accepts every value an honest client can
send but one in 10^12 (``AdditiveLaplace.reported_bounds``) and refuses the rest with a
400 naming the question."""

from __future__ import annotations

import math

import pytest

from consultations.models import Organisation
from consultations.services import consultation_create
from privacy.mechanisms import AdditiveLaplace
from surveys.models import Response
from surveys.services import survey_create, survey_open
from tests.reconstruction.conftest import client_for

pytestmark = pytest.mark.django_db

SCALE = 70.0 / 4.0  # eps 4 over ages 16-86
AGE = {
    "key": "age",
    "text": "Age in whole years",
    "type": "continuous",
    "range": [16, 86],
    "step": 1,
    "mechanism": {"name": "additive_laplace", "scale": SCALE},
}


def test_a_laplace_report_past_ten_sd_is_kept_and_one_past_the_tail_bound_refused() -> None:
    client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(organisation=organisation, title="Bounds", actor="tests")
    survey = survey_open(
        survey=survey_create(
            organisation=organisation,
            consultation=consultation,
            kind="profile",
            title="Registration",
            questions=[AGE],
            actor="tests",
        ),
        actor="tests",
    )
    portal = client_for("north", "portal")
    url = f"/api/v1/surveys/{survey.pk}/responses/"
    # The old bounds, 10 sd (333.5 above, -231.5 below), refused 7e-7 of honest reports;
    # the new ones lie where the Laplace tail is 1e-12: 86 + 17.5 ln(10^12) = 569.5.
    old = 10 * math.sqrt(2) * SCALE
    new = SCALE * math.log(1e12)
    # Reports are whole years (the question's step is its reporting grid, issue 31).
    kept = (86 + old + 0.5, 16 - old - 0.5, 86 + new - 0.5)
    for i, value in enumerate(round(v) for v in kept):
        ok = portal.post(url, {"participant": f"p-{i}", "answers": {"age": value}}, format="json")
        assert ok.status_code == 201, (value, ok.json())
    for i, value in enumerate(round(v) for v in (86 + new + 0.5, 16 - new - 0.5)):
        bad = portal.post(url, {"participant": f"q-{i}", "answers": {"age": value}}, format="json")
        assert bad.status_code == 400, (value, bad.json())
        errors = bad.json()["errors"]["answers"]
        assert list(errors) == ["age"], errors
        assert "could not have been produced by the mechanism" in str(errors["age"])
    assert Response.objects.filter(survey=survey).count() == 3
    assert AdditiveLaplace(SCALE).reported_bounds(16, 86) == pytest.approx((16 - new, 86 + new))
