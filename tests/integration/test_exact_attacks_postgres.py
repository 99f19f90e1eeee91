"""Issue 26's attacks replayed on the real stack: PostgreSQL computes the counts and the
cell keys' sums, a real Celery worker runs the jobs (the SQLite replay is
``tests/guard/test_exact_attacks.py``)."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.guard import exact_attacks
from tests.servers import Worker

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]


@pytest.mark.parametrize("name", sorted(exact_attacks.ATTACKS))
def test_the_attack_recovers_nothing_exact_on_postgresql(
    celery_worker_process: Worker, name: str
) -> None:
    assert connection.vendor == "postgresql", "the integration suite runs on PostgreSQL"
    from django.core.cache import cache

    cache.clear()
    world = exact_attacks.make_world()
    recovered = exact_attacks.ATTACKS[name](world)
    assert recovered is None, f"attack {name} recovered {recovered!r}"


# ------------------------------------- crossings of quotas on exact answers (issue 26)


def _panel_probabilities(world: exact_attacks.World, *quotas: dict) -> tuple[list[str], str]:
    """A panel of 20 (2 reserves) drawn by the real worker under ``quotas``: the
    ``selection_probability`` column of its probabilities.csv, and its notes (JSON)."""
    import csv
    import io
    import json

    outcome = exact_attacks.run(
        world, world.body("panel", size=20, reserves=2, seed=3, quotas=list(quotas))
    )
    assert outcome.published, outcome.error
    response = world.tenant.analyst.get(f"/api/v1/analyses/{outcome.job_id}/probabilities.csv")
    assert response.status_code == 200
    text = (
        b"".join(response.streaming_content).decode()
        if response.streaming
        else response.content.decode()
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows
    notes = json.dumps(outcome.result["notes"])
    assert not exact_attacks.small_numbers(notes.replace("%(threshold)s", ""))
    return [row["selection_probability"] for row in rows], notes


@pytest.mark.parametrize(
    ("district", "low", "high", "shown"),
    [(["C"], 2, 4, False), (["N", "S"], 4, 12, True)],
    ids=["small-crossing", "large-crossings"],
)
def test_quotas_on_exact_answers_are_judged_by_their_crossings_on_postgresql(
    celery_worker_process: Worker, district: list[str], low: int, high: int, shown: bool
) -> None:
    """PostgreSQL counts each crossing of the exact quotas (and sums its record keys):
    district C (40) and owners (198) are each large, but C's owners are 2, so no
    probability is shown; N or S crossed with owners are all large, so every one is.
    The SQLite twin is tests/guard/test_cell_key_cells.py."""
    assert connection.vendor == "postgresql", "the integration suite runs on PostgreSQL"
    from django.core.cache import cache

    from surveys.models import Response

    cache.clear()
    world = exact_attacks.make_world()
    # Fixed record keys (every cell of 3 or more moves by -2): nothing depends on chance.
    Response.objects.filter(survey=world.survey).update(record_key=0)
    quotas = (
        {"where": [exact_attacks.is_in("district", *district)], "min": low, "max": high},
        {"where": [exact_attacks.is_in("tenure", "own")], "min": 8, "max": 10},
    )
    probabilities, notes = _panel_probabilities(world, *quotas)
    if shown:
        assert "" not in probabilities and all(0 < float(p) <= 1 for p in probabilities)
    else:
        assert set(probabilities) == {""}
        assert "probabilities.csv" in notes
