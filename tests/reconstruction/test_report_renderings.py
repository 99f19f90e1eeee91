"""Report downloads cost no rendering or fitting (issue 27): the HTML in the
organisation's languages is rendered when the report finishes; another language is
rendered on its first download and stored, so a second download renders nothing.

Counted by wrapping the real chart renderer and report builder (no timing). Fails on the
old code: every ?lang= download drew every chart again."""

from __future__ import annotations

from typing import Any

import pytest

from consultations.models import Organisation
from reconstruction import presentation, reports
from tests.reconstruction.data import distorted_consultation

pytestmark = pytest.mark.django_db


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"charts": 0, "fits": 0}
    chart, build = presentation.chart_svg, reports.build_report

    def counting_chart(*args: Any, **kwargs: Any) -> str:
        calls["charts"] += 1
        return chart(*args, **kwargs)

    def counting_build(*args: Any, **kwargs: Any) -> Any:
        calls["fits"] += 1
        return build(*args, **kwargs)

    monkeypatch.setattr(presentation, "chart_svg", counting_chart)
    monkeypatch.setattr(reports, "build_report", counting_build)
    return calls


def test_a_second_download_renders_and_fits_nothing(
    analyst, counted, django_capture_on_commit_callbacks
):
    north = Organisation.objects.get(slug="north")
    north.languages = ["en", "pl"]
    north.save()
    data = distorted_consultation(north, n=300, seed=3)
    with django_capture_on_commit_callbacks(execute=True):
        created = analyst.post(f"/api/v1/surveys/{data.opinion.pk}/reports/", {}, format="json")
    report = analyst.get(created.json()["url"]).json()
    assert report["status"] == "succeeded" and counted["fits"] == 1
    made = counted["charts"]
    assert made > 0  # English and Polish drawn by the job
    url = f"/api/v1/reports/{report['id']}/download/"

    for _ in range(2):  # pre-rendered with the report
        polish = analyst.get(url, {"format": "html", "lang": "pl"})
        assert polish.status_code == 200 and '<html lang="pl">' in polish.content.decode()
    assert counted["charts"] == made

    german = analyst.get(url, {"format": "html", "lang": "de"})  # not the organisation's
    assert '<html lang="de">' in german.content.decode()
    after_first = counted["charts"]
    assert after_first > made
    again = analyst.get(url, {"format": "html"}, HTTP_ACCEPT_LANGUAGE="de")
    assert again.content == german.content
    for fmt in ("csv", "json", "html"):
        assert analyst.get(url, {"format": fmt, "lang": "pl"}).status_code == 200
    assert counted["charts"] == after_first and counted["fits"] == 1
