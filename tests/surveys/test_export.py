"""Researcher export (issue 28, item 5): `GET /surveys/{id}/export/` streams a zip of the
distorted answers (CSV or Parquet), scheme.json and a README, with fresh identifiers per
export; exact attributes only on request and only when every cell reaches min_cell."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections import Counter
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from consultations.models import AuditEvent
from reconstruction.algorithms.methods import reconstruct
from surveys import export, retention
from surveys.models import Response
from surveys.services import response_submit, response_withdraw, survey_close
from tests.factories import good_answers, survey_factory
from tests.reconstruction.data import distorted_consultation

pytestmark = pytest.mark.django_db

N = 300


@pytest.fixture
def simulated(tenant):
    data = distorted_consultation(tenant.organisation, n=N, seed=17)
    survey_close(survey=data.profile)
    survey_close(survey=data.opinion)
    return data


def _get(client: Any, survey: Any, **query: str) -> Any:
    return client.get(f"/api/v1/surveys/{survey.pk}/export/", query)


def _zip(response: Any) -> zipfile.ZipFile:
    assert response.status_code == 200, response.content[:500]
    assert response.streaming
    assert response["Content-Type"] == "application/zip"
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def _csv(archive: zipfile.ZipFile) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(archive.read("data.csv").decode())))


def test_a_csv_export_holds_every_live_response_with_fresh_identifiers(tenant, simulated):
    archive = _zip(_get(tenant.analyst, simulated.opinion))
    assert sorted(archive.namelist()) == ["README.txt", "data.csv", "scheme.json"]
    rows = _csv(archive)
    assert len(rows) == N
    # exact attributes (housing, pilot: mechanism none) are left out unless asked for
    assert list(rows[0]) == ["participant", "satisfaction", "site", "attendance"]
    identifiers = [row["participant"] for row in rows]
    assert len(set(identifiers)) == N
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in identifiers)
    assert not set(identifiers) & set(simulated.participants.tolist())
    # the reported categories are the stored ones
    stored = Counter(
        Response.objects.filter(survey=simulated.opinion)
        .filter(answers__question__key="site")
        .values_list("answers__code", flat=True)
    )
    categories = simulated.opinion.questions.get(key="site").categories
    assert Counter(row["site"] for row in rows) == {categories[c]: n for c, n in stored.items()}
    scheme = json.loads(archive.read("scheme.json"))
    assert scheme["survey"] == simulated.opinion.pk
    assert scheme["export"]["rows"] == N and scheme["export"]["exact_attributes"] == []
    assert scheme["thresholds"]["min_cell"] == simulated.consultation.min_cell
    attendance = next(q for q in scheme["questions"] if q["key"] == "attendance")
    assert np.allclose(np.sum(attendance["channel"], axis=1), 1.0)  # negative_manual too
    assert "exported" in attendance and attendance["exported"] is True
    readme = archive.read("README.txt").decode()
    assert "random identifier made for this export only" in readme
    event = AuditEvent.objects.get(action="survey.export")
    assert event.details == {"format": "csv", "exact": [], "rows": N}


def test_two_exports_share_no_identifiers_and_not_the_row_order(tenant, simulated):
    first = _csv(_zip(_get(tenant.analyst, simulated.profile)))
    second = _csv(_zip(_get(tenant.analyst, simulated.profile)))
    other = _csv(_zip(_get(tenant.analyst, simulated.opinion)))
    ids = [{row["participant"] for row in rows} for rows in (first, second, other)]
    assert not ids[0] & ids[1] and not ids[0] & ids[2] and not ids[1] & ids[2]

    def answers(rows: list[dict[str, str]]) -> list[tuple[str, ...]]:
        return [tuple(v for k, v in row.items() if k != "participant") for row in rows]

    assert sorted(answers(first)) == sorted(answers(second))  # the same answers...
    assert answers(first) != answers(second)  # ...in another order


def test_reconstruction_from_the_export_gives_the_products_distribution(
    tenant, simulated, django_capture_on_commit_callbacks
):
    """Counting an export's reported categories and applying the published channel
    (scheme.json) with the same method gives the product's own estimate."""
    archive = _zip(_get(tenant.analyst, simulated.profile))
    rows = _csv(archive)
    scheme = {q["key"]: q for q in json.loads(archive.read("scheme.json"))["questions"]}
    for key, method in (("district", "em_as"), ("district", "eq"), ("sex", "em_as")):
        question = scheme[key]
        tally = Counter(row[key] for row in rows)
        reported = np.array([tally[c] for c in question["categories"]], dtype=float)
        theirs = reconstruct(reported, question["channel"], method=method, ci=False)
        with django_capture_on_commit_callbacks(execute=True):
            created = tenant.analyst.post(
                "/api/v1/analyses/",
                {
                    "survey": simulated.profile.pk,
                    "kind": "distribution",
                    "attribute": key,
                    "method": method,
                },
                format="json",
            )
        assert created.status_code == 202, created.json()
        job = tenant.analyst.get(created.json()["url"]).json()
        assert job["status"] == "succeeded", job
        ours = job["result"]["counts"]
        published = [i for i, c in enumerate(ours) if c is not None]
        assert len(published) >= 2, job["result"]
        np.testing.assert_allclose(
            np.array(ours, dtype=float)[published], theirs.counts[published], rtol=1e-6, atol=1e-6
        )


def test_a_parquet_export_holds_the_same_answers_as_the_csv(tenant, simulated):
    from_csv = _csv(_zip(_get(tenant.analyst, simulated.profile)))
    archive = _zip(_get(tenant.analyst, simulated.profile, format="parquet"))
    assert sorted(archive.namelist()) == ["README.txt", "data.parquet", "scheme.json"]
    table = pq.read_table(io.BytesIO(archive.read("data.parquet")))
    assert table.column_names == ["participant", "sex", "district", "children", "age", "income"]
    assert table.num_rows == N
    columns = table.to_pydict()
    assert str(table.schema.field("sex").type).startswith("dictionary")
    from_parquet = sorted(
        zip(*(columns[k] for k in ("sex", "district", "children")), strict=True)
    )
    assert from_parquet == sorted((r["sex"], r["district"], r["children"]) for r in from_csv)
    assert sorted(columns["age"]) == sorted(float(r["age"]) for r in from_csv)
    assert not set(columns["participant"]) & {r["participant"] for r in from_csv}


def test_exact_attributes_whose_cells_are_small_are_refused_naming_the_rule(tenant, simulated):
    # housing has cells of 7 and 3 residents; pilot was answered by 6 (3 and 3)
    for asked in ("housing", "pilot", "housing,pilot"):
        response = _get(tenant.analyst, simulated.opinion, exact=asked)
        assert response.status_code == 400, response.content
        body = response.json()
        assert "min_cell = 5" in body["detail"]
        assert "exact" in body["errors"]
        assert " 3 " not in body["detail"] and " 7 " not in body["detail"]
    for wrong in ("site", "nothing"):  # a distorted question, an unknown key
        response = _get(tenant.analyst, simulated.opinion, exact=wrong)
        assert response.status_code == 400
        assert "housing, pilot" in response.json()["detail"]
    assert not AuditEvent.objects.filter(action="survey.export").exists()


def test_exact_attributes_with_large_cells_are_exported_on_request(tenant, consultation):
    survey = survey_factory(consultation)  # tenure: exact (mechanism none), own/rent
    for i in range(12):
        response_submit(survey=survey, participant=f"p-{i}", answers=good_answers(i))
    asked = _get(tenant.analyst, survey, exact="tenure")
    assert asked.status_code == 409  # still open: its cells still change
    assert "closed survey" in asked.json()["detail"]
    survey_close(survey=survey)
    rows = _csv(_zip(_get(tenant.analyst, survey, exact="tenure")))
    assert Counter(row["tenure"] for row in rows) == {"own": 6, "rent": 6}
    assert "tenure" not in _csv(_zip(_get(tenant.analyst, survey)))[0]
    exports = AuditEvent.objects.filter(action="survey.export").order_by("id")
    assert [e.details["exact"] for e in exports] == [["tenure"], []]


def test_export_refusals(tenant, other_tenant, simulated):
    assert _get(tenant.portal, simulated.profile).status_code == 403
    assert _get(other_tenant.analyst, simulated.profile).status_code == 404
    bad = _get(tenant.analyst, simulated.profile, format="xlsx")
    assert bad.status_code == 400 and "format" in bad.json()["errors"]
    retention.survey_purge(survey=simulated.profile, actor="tests")
    gone = _get(tenant.analyst, simulated.profile)
    assert gone.status_code == 410
    assert "purged" in gone.json()["detail"]


def test_the_export_is_written_chunk_by_chunk_and_skips_responses_withdrawn_meanwhile(
    tenant, consultation, monkeypatch
):
    monkeypatch.setattr(export, "CHUNK", 4)
    survey = survey_factory(consultation)
    for i in range(11):
        response_submit(survey=survey, participant=f"p-{i}", answers=good_answers(i))
    response = _get(tenant.analyst, survey)
    pieces = iter(response.streaming_content)
    first = next(pieces)  # README and scheme: the plan (ids, permutation) is fixed
    response_withdraw(survey=survey, participant="p-3", actor="tests")
    data = first + b"".join(pieces)
    rows = _csv(zipfile.ZipFile(io.BytesIO(data)))
    assert len(rows) == 10
    assert Counter(row["age"] for row in rows)["19.0"] == 0  # p-3's age was 19
    assert len({row["participant"] for row in rows}) == 10
