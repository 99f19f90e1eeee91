"""Issue 26, second pass: an exact continuous question's cells and every exact total are
published with the cell key; a cell or group is judged on what it publishes; crossings of
exact quotas are judged like cells.

The record keys are set here (all 0, one resident's 0xFFFF0000), so every perturbation is
known: a cell holding that resident moves by +2, any other cell of 3 or more by -2.
"""

from __future__ import annotations

import csv
import io
import json

import pytest

from privacy.mechanisms import cellkey
from reconstruction import disclosure
from reconstruction.jobs import JobRefused
from surveys.models import Response
from tests.guard import exact_attacks
from tests.guard.exact_attacks import is_in, run, small_numbers

pytestmark = pytest.mark.django_db

HIGH_KEY = 0xFFFF0000
"""Its upper half reads 0.99998: the table's +2 for any cell of 3 or more holding it."""


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    from django.core.cache import cache

    cache.clear()


@pytest.fixture(autouse=True)
def _run_jobs(monkeypatch):
    from django.db import transaction

    monkeypatch.setattr(transaction, "on_commit", lambda func, using=None, robust=False: func())


@pytest.fixture
def world(db):
    world = exact_attacks.make_world()
    Response.objects.filter(survey=world.survey).update(record_key=0)
    # p-00100: an owner of district N, aged 80.
    Response.objects.filter(survey=world.survey, participant__reference="p-00100").update(
        record_key=HIGH_KEY
    )
    return world


def _ages(where=None) -> list[tuple[float, bool]]:
    """(age, holds the high key) of the 440 residents meeting ``where`` (a predicate)."""
    out = []
    for i, person in enumerate(exact_attacks.residents()):
        answers = person["answers"]
        if where is None or where(answers):
            out.append((answers["age"], i == 100))
    return out


def _expected(people: list[tuple[float, bool]], low: float, high: float) -> tuple[int, float]:
    inside = [high_key for age, high_key in people if low <= age < high]
    key_sum = HIGH_KEY if any(inside) else 0
    return len(inside), float(cellkey.perturbed_count(len(inside), key_sum))


def test_an_exact_age_histogram_publishes_perturbed_cells_and_total(world):
    outcome = run(world, world.body("distribution", attribute="age"))
    assert outcome.published, outcome.error
    result = outcome.result
    assert result["perturbed"] is True
    people = _ages()
    moved = 0
    for (low, high), shown, suppressed in zip(
        result["intervals"], result["counts"], result["suppressed"], strict=True
    ):
        true, published = _expected(people, low, high)
        if suppressed:
            assert shown is None
            continue
        assert shown == published, (low, high, true, shown)
        moved += shown != true
        assert shown - 2 >= exact_attacks.THRESHOLD  # judged on what it publishes
    # Ages of 5 to 8 residents without the high key are published as 3 to 6 and hidden
    # (3 would say "exactly 5"); the old code published them all, unmoved.
    assert moved >= 1 and result["suppressed"].count(True) > 40
    # The total: 440 residents, one of them holds the high key: 442, not the exact 440.
    assert result["n"] == 442.0


def test_an_exact_age_histogram_within_a_group_publishes_perturbed_cells(world):
    renters = is_in("tenure", "rent")
    outcome = run(world, world.body("distribution", attribute="age", where=[renters]))
    assert outcome.published, outcome.error
    result = outcome.result
    assert result["perturbed"] is True
    people = _ages(lambda a: a["tenure"] == "rent")
    for (low, high), shown in zip(result["intervals"], result["counts"], strict=True):
        if shown is not None:  # (renters' ages are thin: most are hidden)
            assert shown == _expected(people, low, high)[1]
    # p-00100 owns: the group of 242 renters has key 0 and is published as 240.
    assert result["n"] == 240.0 and result["group_size_ci95"] == [238.0, 242.0]


def test_a_two_category_total_cannot_narrow_its_cells(world):
    """With every key 0 both cells move by -2 (own 198 -> 196, rent 242 -> 240). On the
    old code n was the exact 440, so own = 440 - rent lay in [198, 202], and its own
    interval [194, 198]: together exactly 198. Now n is perturbed by its own key."""
    Response.objects.filter(survey=world.survey).update(record_key=0)
    result = run(world, world.body("distribution", attribute="tenure")).result
    own, rent = result["counts"]
    assert (own, rent) == (196.0, 240.0)
    assert result["n"] == 438.0
    from_total = (result["n"] - 2 - (rent + 2), result["n"] + 2 - (rent - 2))
    low, high = max(own - 2, from_total[0]), min(own + 2, from_total[1])
    assert high - low == 4  # nothing narrower than the cell's own interval


def test_a_perturbed_group_is_judged_on_its_published_interval():
    """A group of 5 published as 3 said "at least 5, at most 2 away": exactly 5."""
    low_key, high_key = 0, HIGH_KEY  # moves of -2 and +2 for a count of 3 or more
    assert cellkey.perturbation(5, low_key) == -2 and cellkey.perturbation(5, high_key) == 2
    with pytest.raises(JobRefused):
        disclosure.check_group(disclosure.GroupSize.counted(5, low_key), 5)
    with pytest.raises(JobRefused):
        disclosure.check_group(disclosure.GroupSize.counted(8, low_key), 5)  # 6: [4, 8]
    disclosure.check_group(disclosure.GroupSize.counted(9, low_key), 5)  # 7: [5, 9]
    disclosure.check_group(disclosure.GroupSize.counted(5, high_key), 5)  # 7: [5, 9]


def test_a_count_never_publishes_a_value_that_pins_a_cell_at_the_threshold(world):
    # District C's renters under 25: 5 residents (aged 20-24), no high key: 3 on the old
    # code, which with "at least 5" said exactly 5. Refused now.
    outcome = exact_attacks.count(
        world, is_in("district", "C"), {"attribute": "age", "op": "lte", "value": 24}
    )
    assert not outcome.published
    assert not small_numbers(outcome.error)


def _probabilities(world, outcome) -> list[str]:
    response = world.tenant.analyst.get(f"/api/v1/analyses/{outcome.job_id}/probabilities.csv")
    assert response.status_code == 200
    text = (
        b"".join(response.streaming_content).decode()
        if response.streaming
        else response.content.decode()
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows
    return [row["selection_probability"] for row in rows]


def _panel(world, *quotas):
    return run(
        world,
        world.body("panel", size=20, reserves=2, seed=3, quotas=list(quotas)),
    )


def test_quotas_on_exact_answers_whose_crossing_is_small_show_no_probabilities(world):
    """District C (40) and owners (198) are each large, and so are the rests of the pool,
    but C's owners are 2: a probability follows the crossing, so none is shown."""
    outcome = _panel(
        world,
        {"where": [is_in("district", "C")], "min": 2, "max": 4},
        {"where": [is_in("tenure", "own")], "min": 8, "max": 10},
    )
    assert outcome.published, outcome.error
    assert set(_probabilities(world, outcome)) == {""}
    (note,) = [n for n in outcome.result["notes"] if "probabilities.csv" in json.dumps(n)]
    assert not small_numbers(json.dumps(note).replace("%(threshold)s", ""))


def test_quotas_on_exact_answers_with_large_crossings_show_probabilities(world):
    outcome = _panel(
        world,
        {"where": [is_in("district", "N", "S")], "min": 4, "max": 12},
        {"where": [is_in("tenure", "own")], "min": 8, "max": 10},
    )
    assert outcome.published, outcome.error
    shown = _probabilities(world, outcome)
    assert "" not in shown and all(0 < float(p) <= 1 for p in shown)


def test_a_report_publishes_an_exact_age_question_perturbed(world):
    """Cells, bands and naive counts of an exact continuous question in a report: each a
    cell of its own, keyed by its records (the old code printed true counts)."""
    from reconstruction.models import Report

    response = world.tenant.analyst.post(f"/api/v1/surveys/{world.survey.pk}/reports/")
    assert response.status_code == 202, response.content
    report = Report.objects.get()
    assert report.status == "succeeded", report.error
    (section,) = [s for s in report.result["questions"] if s["key"] == "age"]
    reconstructed = section["reconstructed"]
    assert reconstructed["perturbed"] is True and reconstructed["n"] == 442.0
    assert section["responses"] == 442
    people = _ages()
    for (low, high), shown in zip(reconstructed["intervals"], reconstructed["counts"], strict=True):
        if shown is not None:
            assert shown == _expected(people, low, high)[1]
    assert section["naive"]["counts"] == reconstructed["counts"]
    bands = reconstructed["bands"]
    edges = bands["edges"]
    shown_bands = 0
    for j, shown in enumerate(bands["counts"]):
        if shown is None:
            continue
        shown_bands += 1
        true, published = _expected(people, edges[j], edges[j + 1])
        assert shown == published and shown - 2 >= exact_attacks.THRESHOLD, (j, true, shown)
        assert bands["ci95"][j] == [shown - 2, shown + 2]
    assert shown_bands >= 3
