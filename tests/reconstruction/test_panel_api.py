"""Panels through the API (issue 14; api.md, Analyses, ``kind: "panel"``), on SQLite.

The exact consultation: answers sent without distortion (mechanism ``none``), so every
posterior is 0 or 1, the expected true count of a quota is the true count, and every
panel of the lottery must meet every quota exactly. The distorted one
(tests/reconstruction/data.py) checks that a panel is drawn from noisy answers too.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from django.db import transaction
from rest_framework.test import APIClient

from consultations.models import AuditEvent, Organisation
from consultations.services import consultation_create
from privacy.client import distort_table, table_responses
from reconstruction.kinds import panel as panels
from reconstruction.models import AnalysisJob
from surveys.selectors import survey_scheme
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.coverage import widened
from tests.reconstruction.conftest import client_for
from tests.reconstruction.data import Consultation, distorted_consultation

pytestmark = pytest.mark.django_db

URL = "/api/v1/analyses/"
N = 160
DISTRICTS = ("N", "S", "E", "W")


@dataclass
class Exact:
    survey: int
    sex: dict[str, str]
    district: dict[str, str]
    age: dict[str, float]


@dataclass
class World:
    exact: Exact
    distorted: Consultation
    analyst: APIClient
    other_analyst: APIClient


def _exact_consultation(organisation: Organisation) -> Exact:
    rng = np.random.default_rng(14)
    consultation = consultation_create(
        organisation=organisation,
        title="Exact panel consultation",
        min_responses=10,
        min_cell=5,
        actor="tests",
    )
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Candidates",
        questions=[
            {
                "key": "sex",
                "type": "binary",
                "categories": ["F", "M"],
                "mechanism": {"name": "none"},
            },
            {
                "key": "district",
                "type": "nominal",
                "categories": list(DISTRICTS),
                "mechanism": {"name": "none"},
            },
            {
                "key": "age",
                "type": "continuous",
                "range": [16, 100],
                "step": 1,
                "mechanism": {"name": "none"},
            },
        ],
        actor="tests",
    )
    survey = survey_open(survey=survey, actor="tests")
    refs = [f"c-{i:04d}" for i in range(N)]
    sex = ["F" if i % 2 == 0 else "M" for i in range(N)]
    # District W holds only 3 candidates (below min_cell 5): quotas on it are refused.
    district = ["W" if i < 3 else DISTRICTS[i % 3] for i in range(N)]
    age = [float(a) for a in rng.integers(16, 80, size=N)]
    responses_submit_bulk(
        survey=survey,
        responses=[
            {"participant": r, "answers": {"sex": s, "district": d, "age": a}}
            for r, s, d, a in zip(refs, sex, district, age, strict=True)
        ],
        actor="tests",
    )
    return Exact(
        survey.pk,
        dict(zip(refs, sex, strict=True)),
        dict(zip(refs, district, strict=True)),
        dict(zip(refs, age, strict=True)),
    )


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            analyst = client_for("north", "analyst")
            organisation = Organisation.objects.get(slug="north")
            yield World(
                exact=_exact_consultation(organisation),
                distorted=distorted_consultation(organisation, n=800, seed=1414),
                analyst=analyst,
                other_analyst=client_for("south", "analyst"),
            )
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def panel_body(world: World, **changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "survey": world.exact.survey,
        "kind": "panel",
        "size": 20,
        "reserves": 4,
        "seed": 20261123,
        "where": [{"attribute": "age", "op": "gt", "value": 21}],
        "quotas": [
            {"where": [{"attribute": "sex", "op": "in", "value": ["F"]}], "min": 9, "max": 11},
            {
                "where": [{"attribute": "age", "op": "between", "value": [16, 30]}],
                "min": 3,
                "max": 6,
            },
            {"where": [{"attribute": "district", "op": "in", "value": ["N"]}], "min": 6, "max": 8},
        ],
    }
    body.update(changes)
    return body


def run(client: APIClient, capture: Any, body: dict[str, Any]) -> dict[str, Any]:
    """POST a panel, run its task in-process, return the job as GET shows it."""
    with capture(execute=True):
        response = client.post(URL, body, format="json")
    assert response.status_code == 202, response.json()
    return client.get(response.json()["url"]).json()


def refused_400(client: APIClient, body: dict[str, Any]) -> dict[str, Any]:
    before = AnalysisJob.objects.count()
    response = client.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    assert AnalysisJob.objects.count() == before, "a refused panel must not create a job"
    return response.json()


def read_csv(response: Any) -> list[dict[str, str]]:
    text = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(text)))


# --------------------------------------------------------------------------- happy path


def test_panel_meets_every_quota_exactly_on_undistorted_answers(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    exact = world.exact
    job = run(world.analyst, django_capture_on_commit_callbacks, panel_body(world))
    assert job["status"] == "succeeded", job
    result = job["result"]
    members, reserves = result["participants"], result["reserves"]
    assert len(members) == 20 and len(set(members)) == 20
    assert len(reserves) == 4 and not set(reserves) & set(members)
    assert result["seed"] == 20261123
    # Every member is eligible and the true counts lie in the bands.
    assert all(exact.age[r] > 21 for r in members + reserves)
    women = sum(exact.sex[r] == "F" for r in members)
    young = sum(16 <= exact.age[r] < 30 for r in members)
    north = sum(exact.district[r] == "N" for r in members)
    assert 9 <= women <= 11 and 3 <= young <= 6 and 6 <= north <= 8, (women, young, north)
    # Exact answers: the expected true count is the true count, with a zero-width interval.
    quotas = result["quotas"]
    assert [q["expected"] for q in quotas] == pytest.approx([women, young, north], abs=1e-6)
    for q in quotas:
        assert q["ci95"][0] <= q["expected"] <= q["ci95"][1]
        assert q["ci95"][1] - q["ci95"][0] < 0.5
    assert quotas[0]["where"] == panel_body(world)["quotas"][0]["where"]
    assert (quotas[0]["min"], quotas[0]["max"]) == (9, 11)
    summary = result["selection_probability"]
    assert 0 < summary["min"] <= summary["median"] <= summary["max"] <= 1
    assert "expectation" in result["guarantee"] and "95% interval" in result["guarantee"]
    assert result["probabilities_url"] == f"/api/v1/analyses/{job['id']}/probabilities.csv"

    # The CSV: on exact answers the members and reserves only (every eligible candidate
    # would list the whole pool, issue 26), each once.
    response = world.analyst.get(result["probabilities_url"])
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = read_csv(response)
    assert [row["participant"] for row in rows] == members + reserves
    # Three quotas on exact answers over 160 residents cross in groups smaller than 5
    # (issue 26): a probability would tell a candidate's crossing, so none is shown.
    assert {row["selection_probability"] for row in rows} == {""}
    assert any("probabilities.csv" in json.dumps(note) for note in result["notes"])
    assert result["perturbed"] is True
    eligible = {r for r, a in exact.age.items() if a > 21}
    assert abs(result["expected_eligible"] - len(eligible)) <= 2
    assert {row["participant"] for row in rows if row["selected"] == "1"} == set(members)
    ranked = sorted(
        (int(row["reserve_rank"]), row["participant"]) for row in rows if row["reserve_rank"]
    )
    assert [ref for _, ref in ranked] == reserves

    # The export: members then reserves in order, the quotas in the notes.
    export = world.analyst.get(f"{URL}{job['id']}/export/?format=csv")
    assert export.status_code == 200
    text = export.content.decode()
    bundle = world.analyst.get(f"{URL}{job['id']}/export/?format=zip")
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as archive:
        notes = archive.read("notes.csv").decode()
    assert "quotas[0] (sex in [F]): quota 9 to 11, expected true count" in notes
    table = list(csv.DictReader(io.StringIO(text)))
    assert [row["participant"] for row in table] == members + reserves
    assert [row["reserve_rank"] for row in table[-4:]] == ["1", "2", "3", "4"]

    # Same seed, same panel; the request is in the audit trail with its quotas.
    again = run(world.analyst, django_capture_on_commit_callbacks, panel_body(world))
    assert again["result"]["participants"] == members
    assert again["result"]["reserves"] == reserves
    event = AuditEvent.objects.filter(action="analysis.create").order_by("-pk").first()
    assert event is not None and event.details["kind"] == "panel"
    assert event.details["quotas"] == panel_body(world)["quotas"]
    assert event.details["reserves"] == 4


@pytest.mark.parametrize("objective", ["nash", "leximin"])
def test_other_objectives_meet_the_quotas(
    world: World, django_capture_on_commit_callbacks: Any, objective: str
) -> None:
    job = run(
        world.analyst, django_capture_on_commit_callbacks, panel_body(world, objective=objective)
    )
    assert job["status"] == "succeeded", job
    members = job["result"]["participants"]
    women = sum(world.exact.sex[r] == "F" for r in members)
    assert 9 <= women <= 11
    assert job["result"]["objective"] == objective


def test_the_guarantee_is_stored_as_its_template_and_read_in_the_readers_language(
    world: World, django_capture_on_commit_callbacks: Any, client: Any
) -> None:
    """The panel's plain statement of what the quotas guarantee is stored language-neutral
    (template + parameters, its sentences nested) and read in German and Polish through
    the API, in German in the export and on the admin's panel report; a guarantee stored
    as English text before reads as stored."""
    from django.contrib.auth.models import User

    from reconstruction.algorithms.panel import guarantee_statement

    job = run(world.analyst, django_capture_on_commit_callbacks, panel_body(world))
    assert job["status"] == "succeeded", job
    stored = AnalysisJob.objects.get(pk=job["id"]).result["guarantee"]
    assert stored["template"] == "%(statement)s %(addition)s", stored
    assert stored["params"]["statement"]["params"] == {"size": 20, "quotas": 3}
    english = guarantee_statement(20, 3, eligibility=True)
    url = f"{URL}{job['id']}/"
    assert job["result"]["guarantee"] == english
    german = world.analyst.get(f"{url}?lang=de").json()["result"]["guarantee"]
    assert german.startswith(
        "Das Gremium aus 20 Personen wurde durch eine veröffentlichte Lotterie über Gremien "
        "ausgelost, die alle 3 Quote(n) im Erwartungswert erfüllen"
    ), german
    assert "das 95%-Intervall zeigt" in german, german
    assert german.endswith(
        " Auch die Teilnahmeberechtigung ist nur mit einer Wahrscheinlichkeit bekannt: Die "
        "erwartete Zahl der Mitglieder, die sie wirklich erfüllen, wird neben dem Gremium "
        "angegeben."
    ), german
    polish = world.analyst.get(url, HTTP_ACCEPT_LANGUAGE="pl").json()["result"]["guarantee"]
    assert polish.startswith("Panel 20 osób wylosowano w jawnej loterii"), polish
    assert "wszystkie kwoty (3)" in polish and "przedział 95% pokazuje" in polish, polish
    bundle = world.analyst.get(f"{url}export/?format=zip&lang=de").content
    with zipfile.ZipFile(io.BytesIO(bundle)) as archive:
        notes = [row[0] for row in csv.reader(io.StringIO(archive.read("notes.csv").decode()))]
    assert f"guarantee: {german}" in notes and "published lottery" not in str(notes)
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    page = client.get(f"/admin/reconstruction/analysisjob/{job['id']}/change/?lang=de")
    assert f'<p id="panel-guarantee">{german}</p>' in page.content.decode()

    # A result stored before the guarantee was translatable (English text) reads as stored.
    result = AnalysisJob.objects.get(pk=job["id"]).result
    AnalysisJob.objects.filter(pk=job["id"]).update(result={**result, "guarantee": "old text"})
    assert world.analyst.get(f"{url}?lang=de").json()["result"]["guarantee"] == "old text"


def test_panel_without_seed_reports_the_seed_that_reproduces_it(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    body = panel_body(world)
    del body["seed"]
    first = run(world.analyst, django_capture_on_commit_callbacks, body)["result"]
    assert isinstance(first["seed"], int)
    again = run(world.analyst, django_capture_on_commit_callbacks, {**body, "seed": first["seed"]})
    assert again["result"]["participants"] == first["participants"]


def test_panel_from_distorted_answers_meets_quotas_in_expectation_with_honest_intervals(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    """Randomised sex (75% kept) and ages with uniform noise of +-10: quotas on the
    posteriors (age bands from noisy ages), the drawn panel's true counts inside the
    reported intervals (widened to 99.99%, tests/coverage.py)."""
    data = world.distorted
    body = {
        "survey": data.profile.pk,
        "kind": "panel",
        "size": 20,
        "reserves": 3,
        "seed": 7,
        "quotas": [
            _quota("sex", "in", ["F"], 8, 12),
            _quota("age", "between", [16, 30], 3, 6),
        ],
    }
    job = run(world.analyst, django_capture_on_commit_callbacks, body)
    assert job["status"] == "succeeded", job
    result = job["result"]
    rows = data.index_of(result["participants"])
    truths = [
        int(np.sum(data.pool.sex[rows] == 0)),
        int(np.sum((data.pool.age[rows] >= 16) & (data.pool.age[rows] < 30))),
    ]
    # Randomised response never makes a sex certain: the interval has real width. (Uniform
    # noise of +-10 does make many age bands certain: reported 45 is truly over 30.)
    assert result["quotas"][0]["ci95"][1] - result["quotas"][0]["ci95"][0] > 1.0
    for quota, truth in zip(result["quotas"], truths, strict=True):
        assert quota["min"] - 1e-6 <= quota["expected"] <= quota["max"] + 1e-6, quota
        assert 0 <= quota["expected_outside"] < 2, quota
        low, high = quota["ci95"]
        wide = widened([low, high], alpha=1e-4)
        assert wide[0] <= truth <= wide[1], (quota, truth)
    summary = result["selection_probability"]
    assert summary["min"] > 0 and summary["max"] < 1
    assert summary["min"] <= 20 / 800 <= summary["max"]


AGE_BANDS = ("16-29", "30-44", "45-64", "65+")


def test_panel_with_quotas_on_an_ordinal_age_band_question(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    """Age quotas on the age band asked as an ordinal question (what README advises when
    age quotas matter), randomised like every discrete answer (001's retain/change
    matrix, eps = 4: retain e^4 / (e^4 + 3)): the quotas name categories, the panel's
    expected true counts lie in the bands and the true counts inside the intervals."""
    rng = np.random.default_rng(1425)
    n = 600
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(
        organisation=organisation, title="Age bands", min_responses=10, min_cell=5, actor="tests"
    )
    retain = math.exp(4) / (math.exp(4) + len(AGE_BANDS) - 1)
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Candidates",
        questions=[
            {
                "key": "sex",
                "type": "binary",
                "categories": ["F", "M"],
                "mechanism": {
                    "name": "randomised_response",
                    "retain": math.exp(4) / (math.exp(4) + 1),
                },
            },
            {
                "key": "ageband",
                "type": "ordinal",
                "categories": list(AGE_BANDS),
                "mechanism": {"name": "randomised_response", "retain": retain},
            },
        ],
        actor="tests",
    )
    survey = survey_open(survey=survey, actor="tests")
    # Volunteers skew older; true codes, then what the residents' devices send.
    band = rng.choice(len(AGE_BANDS), size=n, p=[0.15, 0.22, 0.38, 0.25])
    sex = (rng.random(n) < 0.55).astype(int)
    sent = distort_table(
        survey_scheme(survey),
        {"sex": np.array(["F", "M"])[sex], "ageband": np.array(AGE_BANDS)[band]},
        rng,
    )
    refs = np.array([f"a-{i:04d}" for i in range(n)])
    responses_submit_bulk(survey=survey, responses=table_responses(refs, sent), actor="tests")
    assert np.mean(sent["ageband"] != np.array(AGE_BANDS)[band]) > 0.01  # really distorted

    size = 20
    shares = np.bincount(band, minlength=len(AGE_BANDS)) / n
    bounds = [(max(0, round(size * s) - 2), round(size * s) + 2) for s in shares]
    quotas = [
        _quota("ageband", "in", [label], low, high)
        for label, (low, high) in zip(AGE_BANDS, bounds, strict=True)
    ]
    # An ordinal range of categories is a quota too: the under-45s.
    quotas.append(_quota("ageband", "in", ["16-29", "30-44"], 5, 10))
    body = {"survey": survey.pk, "kind": "panel", "size": size, "reserves": 2, "seed": 3,
            "quotas": quotas}  # fmt: skip
    job = run(world.analyst, django_capture_on_commit_callbacks, body)
    assert job["status"] == "succeeded", job
    result = job["result"]
    index = {ref: i for i, ref in enumerate(refs)}
    rows = np.array([index[r] for r in result["participants"]])
    assert len(rows) == size
    truths = [int(np.sum(band[rows] == j)) for j in range(len(AGE_BANDS))]
    truths.append(int(np.sum(band[rows] <= 1)))
    for quota, truth, asked in zip(result["quotas"], truths, quotas, strict=True):
        assert quota["where"] == asked["where"]
        assert quota["min"] - 1e-6 <= quota["expected"] <= quota["max"] + 1e-6, quota
        low, high = quota["ci95"]
        # Randomised response never makes a band certain: the interval has real width.
        assert high - low > 0.5, quota
        wide = widened([low, high], alpha=1e-4)
        assert wide[0] <= truth <= wide[1], (quota, truth)
    summary = result["selection_probability"]
    assert 0 < summary["min"] <= size / n <= summary["max"] < 1


# --------------------------------------------------------------------------- bad input


def _quota(attribute: str, op: str, value: Any, low: Any, high: Any) -> dict[str, Any]:
    return {"where": [{"attribute": attribute, "op": op, "value": value}], "min": low, "max": high}


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"quotas": [_quota("height", "gt", 3, 1, 2)]}, "where", "height"),
        ({"quotas": [_quota("sex", "in", ["F"], -1, 2)]}, "quotas", "greater than or equal"),
        ({"quotas": [_quota("sex", "in", ["F"], 2.5, 4)]}, "quotas", "valid integer"),
        ({"quotas": [_quota("sex", "in", ["F"], 5, 4)]}, "quotas", "larger than max"),
        ({"reserves": -1}, "reserves", "greater than or equal"),
        ({"max_outside": 0}, "max_outside", "greater than or equal"),
        ({"max_outside": -1}, "max_outside", "greater than or equal"),
        ({"max_outside": "some"}, "max_outside", "valid number"),
        ({"objective": "utilitarian"}, "objective", "utilitarian"),
        ({"size": 200}, "size", "participants who answered"),
        (
            {"quotas": [_quota("sex", "in", ["F"], 12, 14), _quota("sex", "in", ["M"], 10, 12)]},
            "quotas",
            "minimums",
        ),
        (
            {"quotas": [_quota("sex", "in", ["F"], 2, 8), _quota("sex", "in", ["M"], 2, 8)]},
            "quotas",
            "maximums",
        ),
        (
            {"quotas": [_quota("age", "lte", 40, 12, 20), _quota("age", "gt", 40, 12, 20)]},
            "quotas",
            "minimums",
        ),
        ({"quotas": [_quota("sex", "in", ["F"], 25, 30)]}, "quotas", "larger than the panel size"),
        (
            {"strata": [{"where": [{"attribute": "sex", "op": "in", "value": ["F"]}], "size": 20}]},
            "strata",
            "quotas, not strata",
        ),
        ({"method": "posterior"}, "method", "posterior"),
    ],
)
def test_bad_panel_requests_are_400s_naming_the_problem(
    world: World, changes: dict[str, Any], field: str, words: str
) -> None:
    body = refused_400(world.analyst, panel_body(world, **changes))
    assert field in body["errors"] or field in body["detail"], body
    assert words in str(body), body


def test_conflicting_bounds_name_every_quota_on_the_attribute(world: World) -> None:
    # The 400 names the quotas whose minimums (or maximums) cannot hold together, not only
    # the rule, so the analyst knows which bounds to change.
    low = refused_400(
        world.analyst,
        panel_body(
            world,
            quotas=[
                _quota("sex", "in", ["F"], 12, 14),
                _quota("age", "lte", 40, 1, 19),
                _quota("sex", "in", ["M"], 10, 12),
            ],
        ),
    )
    text = str(low["errors"]["quotas"])
    assert "quotas[0]" in text and "quotas[2]" in text and "quotas[1]" not in text, low
    assert "22" in text and "20" in text, low  # the sum of the minimums, the panel size
    high = refused_400(
        world.analyst,
        panel_body(world, quotas=[_quota("age", "lte", 40, 2, 8), _quota("age", "gt", 40, 2, 9)]),
    )
    text = str(high["errors"]["quotas"])
    assert "quotas[0]" in text and "quotas[1]" in text and "17" in text, high
    # A bad bound names its quota's index too.
    bad = refused_400(
        world.analyst,
        panel_body(
            world, quotas=[_quota("sex", "in", ["F"], 1, 4), _quota("age", "lte", 40, 0, -2)]
        ),
    )
    assert list(bad["errors"]["quotas"]) == ["1"], bad
    assert "greater than or equal to 0" in str(bad["errors"]["quotas"]["1"]["max"]), bad


def test_a_category_with_two_quotas_is_a_400_naming_both(world: World) -> None:
    # A category has one band. Two quotas on it (the same conditions, in any order) used
    # to be accepted: with bands that do not overlap the job ran and ended refused for a
    # conflict the request already showed, and repeated bands were taken silently.
    women_under_30 = [
        {"attribute": "sex", "op": "in", "value": ["F"]},
        {"attribute": "age", "op": "between", "value": [16, 30]},
    ]
    for first, second in (((9, 11), (3, 5)), ((9, 11), (9, 11))):
        body = refused_400(
            world.analyst,
            panel_body(
                world,
                quotas=[
                    {"where": women_under_30, "min": first[0], "max": first[1]},
                    _quota("district", "in", ["N"], 6, 8),
                    {"where": women_under_30[::-1], "min": second[0], "max": second[1]},
                ],
            ),
        )
        text = str(body["errors"]["quotas"])
        assert "quotas[2]" in text and "repeats the category of quotas[0]" in text, body
        assert "quotas[1]" not in text, body
    # Different categories of one attribute are fine.
    ok = world.analyst.post(
        URL,
        panel_body(
            world,
            quotas=[_quota("sex", "in", ["F"], 9, 11), _quota("sex", "in", ["M"], 9, 11)],
        ),
        format="json",
    )
    assert ok.status_code == 202, ok.json()


def test_quota_fields_belong_to_panels_only(world: World) -> None:
    body = refused_400(
        world.analyst,
        {
            "survey": world.exact.survey,
            "kind": "count",
            "where": [{"attribute": "sex", "op": "in", "value": ["F"]}],
            "quotas": [_quota("sex", "in", ["F"], 1, 2)],
            "objective": "nash",
            "max_outside": 0.2,
        },
    )
    assert "quotas" in body["errors"] and "objective" in body["errors"]
    assert "max_outside" in body["errors"]


def test_panel_over_the_cost_budget_is_refused_up_front(world: World, settings: Any) -> None:
    settings.ANALYSIS_COST_BUDGET = 5000
    body = refused_400(world.analyst, panel_body(world))
    assert "ANALYSIS_COST_BUDGET" in str(body)


# --------------------------------------------------------------------------- in the worker


def test_infeasible_quotas_name_the_conflict_and_the_smallest_relaxation(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    quotas = [
        _quota("sex", "in", ["F"], 9, 11),
        {"where": [{"attribute": "sex", "op": "in", "value": ["F"]},
                   {"attribute": "district", "op": "in", "value": ["N"]}],
         "min": 13, "max": 15},
    ]  # fmt: skip
    job = run(world.analyst, django_capture_on_commit_callbacks, panel_body(world, quotas=quotas))
    assert job["status"] == "refused", job
    # Stored with its template too, so readers see it in their own language.
    assert AnalysisJob.objects.get(pk=job["id"]).error_message is not None
    error = job["error"]
    assert "quotas[0] (sex in [F])" in error and "quotas[1]" in error, error
    # On exact answers the smallest relaxation is a count of the pool (issue 26): only
    # the conflicting quotas are named.
    assert "Smallest feasible relaxation" not in error and "->" not in error
    assert "smallest relaxation is not stated" in error
    # The reason is stored as a template: read in German, with the same quotas.
    german = world.analyst.get(f"/api/v1/analyses/{job['id']}/?lang=de").json()["error"]
    assert german.startswith("kein Panel dieser Größe"), german
    assert "diese Quoten widersprechen sich: quotas[0] (sex in [F])" in german


def test_panel_larger_than_the_eligible_pool_fails_without_stating_it(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    young = [{"attribute": "age", "op": "lte", "value": 20}]
    pool = sum(a <= 20 for a in world.exact.age.values())
    job = run(
        world.analyst,
        django_capture_on_commit_callbacks,
        panel_body(world, where=young, size=pool - 2, quotas=[], reserves=4),
    )
    # Refused like an audit refusal, in the same words (issue 26): at most half of a pool.
    assert job["status"] == "refused", job
    assert "at most half" in job["error"]
    assert not re.search(rf"\b{pool}\b", job["error"]), job["error"]


def test_small_quota_category_is_refused_without_a_below_threshold_number(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    quotas = [_quota("district", "in", ["W"], 0, 1)]  # 3 candidates, min_cell 5
    job = run(world.analyst, django_capture_on_commit_callbacks, panel_body(world, quotas=quotas))
    assert job["status"] == "refused", job
    assert "too small to publish" in job["error"] and "reaches below 5" in job["error"]
    assert not re.search(r"\b[0-4]\b(?!\])", job["error"].replace("quotas[0]", "")), job["error"]
    assert job["result"] is None
    refusal = AuditEvent.objects.filter(action="analysis.refused").order_by("-pk").first()
    assert refusal is not None and refusal.details["quotas"] == quotas


def test_two_panels_whose_pools_differ_by_a_small_group_are_refused_by_the_audit(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    """Differencing (issue 13): the candidate lists of two panels with exact eligibilities
    would give the 3 candidates of district W by subtraction."""
    wide = [{"attribute": "district", "op": "in", "value": ["N", "S", "W"]}]
    narrow = [{"attribute": "district", "op": "in", "value": ["N", "S"]}]
    first = run(
        world.analyst,
        django_capture_on_commit_callbacks,
        panel_body(world, where=wide, quotas=[], size=10, reserves=0),
    )
    assert first["status"] == "succeeded", first
    # The pool's size as published: perturbed by the cell key (exact answers, issue 26).
    truth = sum(d in "NSW" for d in world.exact.district.values())
    assert abs(first["result"]["candidates"] - truth) <= 2 and first["result"]["perturbed"]
    second = run(
        world.analyst,
        django_capture_on_commit_callbacks,
        panel_body(world, where=narrow, quotas=[], size=10, reserves=0),
    )
    assert second["status"] == "refused", second
    # A panel's audit refusal reads as its size refusal (issue 26).
    assert "threshold of 5" in second["error"] and "at most half" in second["error"]
    assert not re.search(r"\b3\b", second["error"]), second["error"]


def test_small_eligible_pool_is_refused(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    where = [{"attribute": "district", "op": "in", "value": ["W"]}]
    job = run(
        world.analyst,
        django_capture_on_commit_callbacks,
        panel_body(world, where=where, quotas=[], size=1, reserves=0),
    )
    assert job["status"] == "refused", job
    assert job["error"].startswith("the eligible pool")


# --------------------------------------------------------------------------- downloads


def test_probabilities_csv_only_for_a_finished_panel_of_ones_organisation(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    job = run(world.analyst, django_capture_on_commit_callbacks, panel_body(world))
    url = job["result"]["probabilities_url"]
    assert world.other_analyst.get(url).status_code == 404
    count = run(
        world.analyst,
        django_capture_on_commit_callbacks,
        {"survey": world.exact.survey, "kind": "count",
         "where": [{"attribute": "sex", "op": "in", "value": ["F"]}]},
    )  # fmt: skip
    assert world.analyst.get(f"{URL}{count['id']}/probabilities.csv").status_code == 404
    with django_capture_on_commit_callbacks(execute=False):
        queued = world.analyst.post(URL, panel_body(world), format="json").json()
    response = world.analyst.get(f"{URL}{queued['id']}/probabilities.csv")
    assert response.status_code == 400 and "queued" in response.json()["detail"]


# --------------------------------------------------------------------------- cancellation


def test_a_queued_panel_cancelled_is_never_run(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    from reconstruction.services import analysis_run

    with django_capture_on_commit_callbacks(execute=False):
        created = world.analyst.post(URL, panel_body(world), format="json").json()
    response = world.analyst.post(f"{URL}{created['id']}/cancel/")
    assert response.status_code == 200
    assert response.json()["status"] == "failed"
    assert response.json()["error"].startswith("Cancelled by")
    analysis_run(job_id=created["id"])  # the queued message arrives later: nothing runs
    job = world.analyst.get(created["url"]).json()
    assert job["status"] == "failed" and job["result"] is None
    assert AuditEvent.objects.filter(action="analysis.cancel").exists()
    assert world.other_analyst.post(f"{URL}{created['id']}/cancel/").status_code == 404


def test_a_running_panel_stops_when_cancelled(
    world: World, django_capture_on_commit_callbacks: Any, monkeypatch: Any
) -> None:
    from reconstruction import services

    real = panels.select_panel
    calls: list[float] = []

    def cancelling(*args: Any, progress: Any, **kwargs: Any) -> Any:
        def report(fraction: float) -> None:
            calls.append(fraction)
            if len(calls) == 1:  # the analyst cancels while the solver runs
                job = AnalysisJob.objects.get(status="running")
                services.analysis_cancel(job=job, requested_by="analyst")
            progress(fraction)

        return real(*args, progress=report, **kwargs)

    monkeypatch.setattr(panels, "select_panel", cancelling)
    # Every progress report is written (the writer skips reports within 0.5 s of the last).
    monkeypatch.setattr("reconstruction.jobs.time.monotonic", itertools.count(10, 10).__next__)
    job = run(world.analyst, django_capture_on_commit_callbacks, panel_body(world))
    assert calls, "the solver never reported progress"
    assert job["status"] == "failed" and job["error"] == "Cancelled by analyst."
    assert job["result"] is None
    assert len(calls) == 1, "the solver went on after the cancellation"


def test_a_panel_with_max_outside_states_the_level_each_quota_keeps(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    """The opt-in tightened bands through the API: every quota states the level of
    expected seats outside its band that every panel of the lottery keeps (the realised
    count's variance: Bernoulli plus the posteriors' replicate variance); without
    max_outside it is null. The drawn panel's expected seats outside are computed with
    the same total variance as its interval."""
    data = world.distorted
    body = {
        "survey": data.profile.pk,
        "kind": "panel",
        "size": 20,
        "seed": 7,
        "quotas": [
            _quota("sex", "in", ["F"], 8, 12),
            _quota("age", "between", [16, 30], 3, 6),
        ],
    }
    plain = run(world.analyst, django_capture_on_commit_callbacks, body)["result"]
    tight = run(world.analyst, django_capture_on_commit_callbacks, {**body, "max_outside": 0.2})
    assert tight["status"] == "succeeded", tight
    ladder = {0.2, 0.3, 0.4, 0.6, 1.0}
    for quota in tight["result"]["quotas"]:
        level = quota["outside_level"]
        assert level is None or round(level, 6) in ladder, quota
        assert quota["min"] - 1e-6 <= quota["expected"] <= quota["max"] + 1e-6, quota
    assert any(q["outside_level"] is not None for q in tight["result"]["quotas"])
    assert all(q["outside_level"] is None for q in plain["quotas"])
    assert "expected to fall outside its band by at most 0.2" in str(tight["result"]["guarantee"])
