"""The ``change`` kind through the API (issue 29; api.md, Analyses), on SQLite.

A consultation with a "before" and an "after" survey of the same residents, whose true
(before, after) answers are drawn from a known transition table and distorted by
randomised response (retain 0.7) as a portal would; some residents answer one survey
only. The reconstruction must cover the known transitions and net shifts, count the
unpaired residents apart, and every bad request must get a 400 naming its problem.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from django.db import transaction
from django.db.models import Sum
from django.utils import timezone
from rest_framework.test import APIClient

from consultations.models import Organisation
from consultations.services import consultation_create
from privacy.client import distort_table, table_responses
from privacy.mechanisms import cellkey
from reconstruction.algorithms.simulation import simulate_transitions
from reconstruction.models import AnalysisJob, Job
from surveys.models import Response, Survey
from surveys.selectors import survey_scheme
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.coverage import widened
from tests.reconstruction.conftest import client_for

pytestmark = pytest.mark.django_db

URL = "/api/v1/analyses/"
SUPPORT = ("against", "unsure", "for")
PAIRED, BEFORE_ONLY, AFTER_ONLY = 3000, 100, 60
# Against loses 9 points to for; unsure keeps its share (net 0); no cell is small.
TRUTH = np.array([[0.25, 0.07, 0.13], [0.06, 0.10, 0.07], [0.05, 0.06, 0.21]])
RR = {"name": "randomised_response", "retain": 0.7}


def _questions(after: bool) -> list[dict[str, Any]]:
    return [
        {"key": "support", "type": "nominal", "categories": list(SUPPORT), "mechanism": RR},
        {
            "key": "support_after" if after else "support_before",
            "type": "nominal",
            "categories": list(SUPPORT),
            "mechanism": RR,
        },
        {
            "key": "mood",
            "type": "binary",
            "categories": ["good", "bad"] if after else ["bad", "good"],
            "mechanism": RR,
        },
        {
            "key": "score",
            "type": "continuous",
            "range": [0, 10],
            "mechanism": {"name": "additive_uniform", "half_width": 1},
        },
    ]


@dataclass
class World:
    before: Survey
    after: Survey
    profile: Survey
    elsewhere: Survey
    sex: np.ndarray
    truth: tuple[np.ndarray, np.ndarray]
    analyst: APIClient
    other_analyst: APIClient


def _survey(
    organisation: Organisation, consultation: Any, kind: str, title: str, qs: Any
) -> Survey:
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind=kind,
        title=title,
        questions=qs,
        actor="tests",
    )
    return survey_open(survey=survey, actor="tests")


def _send(survey: Survey, refs: np.ndarray, columns: dict[str, Any], rng: Any) -> None:
    sent = distort_table(survey_scheme(survey), columns, rng)
    responses = table_responses(refs, sent)
    for start in range(0, len(responses), 10_000):
        responses_submit_bulk(
            survey=survey, responses=responses[start : start + 10_000], actor="tests"
        )


def _build(organisation: Organisation) -> dict[str, Any]:
    rng = np.random.default_rng(29)
    consultation = consultation_create(
        organisation=organisation, title="Deliberation", min_responses=10, min_cell=5, actor="tests"
    )
    profile = _survey(
        organisation,
        consultation,
        "profile",
        "Residents",
        [{"key": "sex", "type": "binary", "categories": ["F", "M"], "mechanism": {"name": "none"}}],
    )
    before = _survey(organisation, consultation, "opinion", "Before", _questions(False))
    after = _survey(organisation, consultation, "opinion", "After", _questions(True))
    other = consultation_create(organisation=organisation, title="Elsewhere", actor="tests")
    elsewhere = _survey(organisation, other, "opinion", "Other", _questions(True))
    total = PAIRED + BEFORE_ONLY + AFTER_ONLY
    refs = np.array([f"p-{i:05d}" for i in range(total)])
    b, a = simulate_transitions(total, TRUTH, rng=rng)
    sex = rng.integers(0, 2, size=total)
    labels = np.array(SUPPORT)
    _send(profile, refs, {"sex": np.array(["F", "M"])[sex]}, rng)
    first = slice(0, PAIRED + BEFORE_ONLY)
    second = np.r_[0:PAIRED, PAIRED + BEFORE_ONLY : total]

    def columns(codes: np.ndarray, rows: Any, after: bool) -> dict[str, Any]:
        m = len(codes[rows])
        return {
            "support": labels[codes[rows]],
            "support_after" if after else "support_before": labels[codes[rows]],
            "mood": np.array(["good", "bad"])[rng.integers(0, 2, size=m)],
            "score": rng.uniform(0, 10, size=m),
        }

    _send(before, refs[first], columns(b, first, False), rng)
    _send(after, refs[second], columns(a, second, True), rng)
    return {
        "before": before,
        "after": after,
        "profile": profile,
        "elsewhere": elsewhere,
        "sex": sex[:PAIRED],
        "truth": (b[:PAIRED], a[:PAIRED]),
    }


@pytest.fixture(scope="module")
def world(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            analyst = client_for("north", "analyst")
            organisation = Organisation.objects.get(slug="north")
            yield World(
                **_build(organisation),
                analyst=analyst,
                other_analyst=client_for("south", "analyst"),
            )
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def analyse(world: World, capture: Any, body: dict[str, Any]) -> dict[str, Any]:
    with capture(execute=True):
        response = world.analyst.post(URL, body, format="json")
    assert response.status_code == 202, response.json()
    job = world.analyst.get(response.json()["url"]).json()
    assert job["status"] == "succeeded", (job["error"], job)
    return job["result"]


def refused(world: World, body: dict[str, Any]) -> dict[str, Any]:
    response = world.analyst.post(URL, body, format="json")
    assert response.status_code == 400, response.json()
    body = response.json()
    return {**body.get("errors", {}), "detail": body.get("detail")}


def covers(ci: list[float], truth: float) -> bool:
    low, high = widened(ci, alpha=1e-4)
    return low <= truth <= high


def change(world: World, **extra: Any) -> dict[str, Any]:
    return {
        "survey": world.before.pk,
        "kind": "change",
        "after": world.after.pk,
        "attribute": "support",
        **extra,
    }


def _true_table(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    return np.bincount(before * 3 + after, minlength=9).reshape(3, 3).astype(float)


def test_change_reconstructs_known_transitions(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    result = analyse(world, django_capture_on_commit_callbacks, change(world))
    assert result["categories"] == list(SUPPORT)
    assert result["paired"] == PAIRED
    assert (result["before_only"], result["after_only"]) == (BEFORE_ONLY, AFTER_ONLY)
    truth = _true_table(*world.truth)
    cells = np.array(result["transitions"], dtype=float)
    assert cells.sum() == pytest.approx(PAIRED, rel=1e-6)
    for i in range(3):
        for j in range(3):
            assert covers(result["transitions_ci95"][i][j], truth[i, j]), (i, j, cells, truth)
    before, after = truth.sum(1) / PAIRED, truth.sum(0) / PAIRED
    net = after - before
    for i in range(3):
        assert covers(result["before_ci95"][i], before[i])
        assert covers(result["after_ci95"][i], after[i])
        assert covers(result["net_change_ci95"][i], net[i])
        assert result["net_change"][i] == pytest.approx(result["after"][i] - result["before"][i])
    # The test of change: against clearly lost, for clearly gained, unsure did not move.
    positive = result["shift_positive"]
    assert positive[0] < 0.01 and positive[2] > 0.99
    low, high = result["net_change_ci95"][1]
    assert low < 0 < high
    notes = " ".join(str(n) for n in result["notes"])
    assert "toward unsure covers 0" in notes
    assert "toward for covers 0" not in notes
    # The naive table (reported answers as if true) is far off: the fit is not the naive one.
    assert abs(cells[0, 0] - truth[0, 0]) < 0.3 * truth[0, 0]


def test_after_attribute_with_another_key(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    result = analyse(
        world,
        django_capture_on_commit_callbacks,
        change(world, attribute="support_before", after_attribute="support_after"),
    )
    truth = _true_table(*world.truth)
    assert result["paired"] == PAIRED
    assert covers(result["transitions_ci95"][0][2], truth[0, 2])


def test_where_on_the_profile_restricts_the_group(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    where = [{"attribute": "sex", "op": "in", "value": ["F"]}]
    result = analyse(world, django_capture_on_commit_callbacks, change(world, where=where))
    women = world.sex == 0
    truth = _true_table(world.truth[0][women], world.truth[1][women])
    assert result["paired"] == PAIRED
    assert all(
        covers(result["transitions_ci95"][i][j], truth[i, j]) for i in range(3) for j in range(3)
    )
    # sex is exact (a register): the paired women are a register's count, published by
    # the cell key as a count is (issue 26), from their before responses' record keys.
    refs = [f"p-{i:05d}" for i in np.flatnonzero(women)]
    keys = Response.objects.filter(survey=world.before, participant__reference__in=refs)
    key_sum = int(keys.aggregate(total=Sum("record_key"))["total"])
    published = cellkey.perturbed_count(int(women.sum()), key_sum)
    assert result["perturbed"] is True
    assert result["group_size"] == published
    assert result["group_ci95"] == [published - 2, published + 2]
    # The shown table adds up to the published size, not to the true count.
    cells = np.array(result["transitions"], dtype=float)
    assert cells.sum() == pytest.approx(published, rel=1e-9)
    again = analyse(world, django_capture_on_commit_callbacks, change(world, where=where))
    assert again["group_size"] == published  # the same records, the same perturbation


def test_a_where_on_distorted_answers_is_not_perturbed(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    where = [{"attribute": "mood", "op": "in", "value": ["good"]}]
    result = analyse(world, django_capture_on_commit_callbacks, change(world, where=where))
    assert "perturbed" not in result
    low, high = result["group_ci95"]
    assert high - low > 10  # the fitted group's own interval


def test_where_on_a_question_of_the_after_survey(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    # ``support_after`` holds the same true answer as the after ``support``: keeping to
    # those who answered "for" after leaves only the "for" column of the true table.
    where = [{"attribute": "support_after@after", "op": "in", "value": ["for"]}]
    result = analyse(world, django_capture_on_commit_callbacks, change(world, where=where))
    truth = _true_table(*world.truth) * (np.arange(3) == 2)
    assert result["paired"] == PAIRED
    assert result["group_size"] == pytest.approx(truth.sum(), rel=0.1)
    for i in range(3):
        for j in range(3):
            value = result["transitions"][i][j]
            if value is not None:
                assert covers(result["transitions_ci95"][i][j], truth[i, j]), (i, j)
    # The other columns are (about) empty: their cells' intervals reach below the
    # threshold and are suppressed. Each row's total is published (its share before),
    # so a row's shown "for" cell would give its hidden cells' sum, about empty but not
    # provably so: the rows are hidden whole, and their shares say what they held.
    shown = [(i, j) for i in range(3) for j in range(3) if result["transitions"][i][j] is not None]
    assert all(j == 2 for _, j in shown), shown
    assert None not in result["before"]
    group = truth.sum(axis=1) / truth.sum()
    for i in range(3):
        assert covers(result["before_ci95"][i], group[i])


@pytest.mark.parametrize(
    ("attribute", "words"),
    [
        ("nothing@after", "the after survey"),
        ("support_after", "'support_after@after'"),
        ("sex@after", "has no question 'sex'"),
    ],
)
def test_where_on_the_after_survey_names_unknown_questions(
    world: World, attribute: str, words: str
) -> None:
    where = [{"attribute": attribute, "op": "in", "value": ["for"]}]
    jobs = AnalysisJob.objects.count()
    errors = refused(world, change(world, where=where))
    assert words in str(errors.get("where")), errors
    assert AnalysisJob.objects.count() == jobs


def _panel(world: World, members: list[str], *, survey: Survey | None = None, **fields: Any) -> int:
    job = AnalysisJob.objects.create(
        organisation=world.before.consultation.organisation,
        requested_by="tests",
        survey=survey or world.profile,
        kind=fields.pop("kind", "panel"),
        spec={},
        status=fields.pop("status", Job.Status.SUCCEEDED),
        result={"participants": members},
        finished_at=timezone.now(),
    )
    return job.pk


def test_panel_restricts_to_its_members(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    # 400 panel members, 50 of whom answered the before survey only.
    members = [f"p-{i:05d}" for i in range(2650, 3050)]
    result = analyse(
        world, django_capture_on_commit_callbacks, change(world, panel=_panel(world, members))
    )
    assert result["paired"] == 350
    assert (result["before_only"], result["after_only"]) == (50, 0)
    assert result["panel"] > 0
    rows = np.arange(2650, 3000)
    truth = _true_table(world.truth[0][rows], world.truth[1][rows])
    cells = [v for row in result["transitions"] for v in row]
    assert sum(v for v in cells if v is not None) <= 350 + 1e-6
    # A hidden cell never comes alone (it could be derived from the total).
    assert sum(v is None for v in cells) != 1
    for i in range(3):
        for j in range(3):
            if result["transitions"][i][j] is not None:
                assert covers(result["transitions_ci95"][i][j], truth[i, j])


@pytest.mark.parametrize(
    ("extra", "field", "words"),
    [
        ({"after": "same"}, "after", "is the before survey"),
        ({"after": "elsewhere"}, "after", "not a survey of this consultation"),
        ({"after": 2**62}, "after", "not a survey of this consultation"),
        ({"attribute": "nothing"}, "attribute", "the before survey"),
        ({"attribute": "support_before"}, "attribute", "the after survey"),
        (
            {"attribute": "support", "after_attribute": "nothing"},
            "after_attribute",
            "has no question 'nothing'",
        ),
        ({"attribute": "mood"}, "attribute", "same categories"),
        ({"attribute": "score"}, "attribute", "not yet supported"),
        ({"where": [{"attribute": "nothing", "op": "in", "value": ["F"]}]}, "where", "nothing"),
    ],
)
def test_bad_requests_get_a_400_naming_the_problem(
    world: World, extra: dict[str, Any], field: str, words: str
) -> None:
    body = change(world, **extra)
    if body["after"] == "same":
        body["after"] = world.before.pk
    elif body["after"] == "elsewhere":
        body["after"] = world.elsewhere.pk
    jobs = AnalysisJob.objects.count()
    errors = refused(world, body)
    assert words in str(errors.get(field)), errors
    assert AnalysisJob.objects.count() == jobs  # nothing half-stored


def test_a_panel_must_be_a_succeeded_panel_of_this_consultation(world: World) -> None:
    members = ["p-00001"]
    bad = [
        _panel(world, members, status=Job.Status.FAILED),
        _panel(world, members, kind="sample"),
        _panel(world, members, survey=world.elsewhere),
        2**62,
    ]
    for panel in bad:
        errors = refused(world, change(world, panel=panel))
        assert "is not a succeeded panel of this consultation" in str(errors["panel"]), errors


def test_a_panel_of_another_organisation_is_not_found(world: World) -> None:
    panel = _panel(world, ["p-00001"])
    body = change(world, panel=panel)
    response = world.other_analyst.post(URL, body, format="json")
    assert response.status_code in (400, 404)
    assert "p-00001" not in str(response.json())


def test_change_needs_the_after_survey_and_other_kinds_refuse_it(world: World) -> None:
    body = change(world)
    del body["after"]
    assert "needs the after survey" in str(refused(world, body)["after"])
    count = {
        "survey": world.before.pk,
        "kind": "count",
        "after": world.after.pk,
        "where": [{"attribute": "support", "op": "in", "value": ["for"]}],
    }
    assert "Only a change takes 'after'" in str(refused(world, count)["after"])


def test_refusals_speak_the_readers_language(world: World) -> None:
    body = change(world)
    body["after"] = world.before.pk
    german = world.analyst.post(URL, body, format="json", HTTP_ACCEPT_LANGUAGE="de")
    polish = world.analyst.post(URL, body, format="json", HTTP_ACCEPT_LANGUAGE="pl")
    assert "Davor-Umfrage" in german.json()["errors"]["after"]
    assert "ankietą „przed”" in polish.json()["errors"]["after"]


# --------------------------------------------------------------------------- pages, exports


@pytest.fixture
def staff(client: Any) -> Any:
    from django.contrib.auth.models import User

    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    return client


def test_the_admin_offers_how_opinions_changed_and_shows_the_heat_map(
    world: World, staff: Any, django_capture_on_commit_callbacks: Any
) -> None:
    url = f"/admin/reconstruction/analysisjob/add/?survey={world.before.pk}"
    assert "how opinions changed" in staff.get(url).content.decode()
    german = staff.get(url, HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "wie sich Meinungen verändert haben" in german
    with django_capture_on_commit_callbacks(execute=True):
        response = staff.post(
            url, {"kind": "change", "attribute": "support", "after": str(world.after.pk)}
        )
    assert response.status_code == 302, response.content.decode()[-2000:]
    job = AnalysisJob.objects.filter(kind="change").latest("pk")
    assert job.spec["after"] == world.after.pk and job.status == Job.Status.SUCCEEDED
    page = staff.get(response["Location"]).content.decode()
    assert "<svg" in page and "answer before" in page and "answer after" in page
    assert "for gained" in page and "against lost" in page
    assert "unsure changed by" in page and "the interval covers 0" in page
    polish = staff.get(response["Location"], HTTP_ACCEPT_LANGUAGE="pl").content.decode()
    assert "odpowiedź przed" in polish and "przedział obejmuje 0" in polish


def test_the_exports_carry_the_transition_table(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    import io
    import zipfile

    import openpyxl
    import pandas as pd

    with django_capture_on_commit_callbacks(execute=True):
        created = world.analyst.post(URL, change(world), format="json").json()
    result = world.analyst.get(created["url"]).json()["result"]
    csv = world.analyst.get(f"{created['url']}export/", {"format": "csv"})
    assert csv.status_code == 200
    table = pd.read_csv(io.BytesIO(csv.content))
    cells = table[table["quantity"] == "transition"]
    assert len(cells) == 9
    row = cells[(cells["before"] == "against") & (cells["after"] == "for")].iloc[0]
    # Rounded for reading (1 decimal from 100 on, 2 below).
    assert row["estimate"] == pytest.approx(result["transitions"][0][2], abs=0.05)
    assert row["ci95_low"] == pytest.approx(result["transitions_ci95"][0][2][0], abs=0.05)
    assert cells["category"].isna().all()
    net = table[table["quantity"] == "net_change"]
    assert list(net["estimate"]) == pytest.approx(result["net_change"], abs=0.05)
    # A share or a net change names its category once, in its own column.
    for name in ("before", "after", "net_change"):
        shares = table[table["quantity"] == name]
        assert list(shares["category"]) == list(SUPPORT)
        assert shares["before"].isna().all() and shares["after"].isna().all()
    bundle = world.analyst.get(f"{created['url']}export/", {"format": "zip"})
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as archive:
        assert "gained" in archive.read("notes.csv").decode()  # the net shift in words
    xlsx = world.analyst.get(f"{created['url']}export/", {"format": "xlsx"})
    book = openpyxl.load_workbook(io.BytesIO(xlsx.content))
    header = [c.value for c in next(book.worksheets[0].iter_rows(max_row=1))]
    assert header[:4] == ["quantity", "before", "after", "category"]
    assert book.worksheets[0].max_row == 1 + 9 + 3 * 3
    net_row = [c.value for c in next(book.worksheets[0].iter_rows(min_row=1 + 9 + 6 + 1))]
    assert net_row[:4] == ["net_change", None, None, "against"]
    with zipfile.ZipFile(io.BytesIO(bundle.content)) as archive:
        names = [n for n in archive.namelist() if n != "notes.csv" and n.endswith(".csv")]
        data = pd.read_csv(io.BytesIO(archive.read(names[0])))
    assert list(data[data["quantity"] == "net_change"]["category"]) == list(SUPPORT)


def test_the_report_shows_each_published_change(
    world: World, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        world.analyst.post(URL, change(world), format="json")
        created = world.analyst.post(f"/api/v1/surveys/{world.before.pk}/reports/").json()
    url = f"/api/v1/reports/{created['id']}/download/"
    html = world.analyst.get(url, {"format": "html"}).content.decode()
    assert "How opinions changed: support" in html
    assert "<svg" in html.split("How opinions changed")[1]
    assert "for gained" in html
    german = world.analyst.get(url, {"format": "html", "lang": "de"}).content.decode()
    assert "Wie sich Meinungen verändert haben: support" in german
    document = world.analyst.get(url, {"format": "json"}).json()
    assert document["changes"][0]["result"]["paired"] == PAIRED


def test_a_change_of_exact_answers_publishes_the_cell_key_counts(
    django_capture_on_commit_callbacks: Any,
) -> None:
    """Both answers collected undistorted (a register, issue 26): each transition cell is
    published as its cell-key perturbed count (within 2 of the truth), never exactly."""
    analyst = client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(organisation=organisation, title="Register", actor="tests")
    exact = [{"key": "support", "type": "nominal", "categories": list(SUPPORT),
              "mechanism": {"name": "none"}}]  # fmt: skip
    before = _survey(organisation, consultation, "opinion", "Before", exact)
    after = _survey(organisation, consultation, "opinion", "After", exact)
    rng = np.random.default_rng(26)
    b, a = simulate_transitions(400, TRUTH, rng=rng)
    refs = [f"r-{i:03d}" for i in range(400)]
    for survey, codes in ((before, b), (after, a)):
        responses_submit_bulk(
            survey=survey,
            responses=[
                {"participant": ref, "answers": {"support": SUPPORT[c]}}
                for ref, c in zip(refs, codes, strict=True)
            ],
            actor="tests",
        )
    body = {"survey": before.pk, "kind": "change", "after": after.pk, "attribute": "support"}
    with django_capture_on_commit_callbacks(execute=True):
        created = analyst.post(URL, body, format="json").json()
    result = analyst.get(created["url"]).json()["result"]
    assert result["perturbed"] is True
    truth = _true_table(b, a)
    keys = dict(
        Response.objects.filter(survey=before).values_list("participant__reference", "record_key")
    )
    for i in range(3):
        for j in range(3):
            in_cell = [ref for ref, x, y in zip(refs, b, a, strict=True) if (x, y) == (i, j)]
            key_sum = sum(int(keys[ref]) for ref in in_cell)
            published = cellkey.perturbed_count(int(truth[i, j]), key_sum)
            assert result["transitions"][i][j] == published, (i, j)
            assert result["transitions_ci95"][i][j] == [published - 2, published + 2]
    shown = np.array(result["transitions"], dtype=float)
    assert result["before"] == pytest.approx(list(shown.sum(axis=1) / shown.sum()))
