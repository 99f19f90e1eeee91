"""Issue 26's adversarial pass, replayed: a register of exact attributes and attacks 1-7.

440 residents with exact attributes (``mechanism: none``): district, tenure, age (whole
years) and a yes/no item. District C holds 38 renters and exactly 2 owners, both aged 95
and both answering "Y" (``p-00438`` and ``p-00439``); nobody else answers "Y" in C or N,
and nobody else is older than 90. Each attack returns what it recovers *exactly* (a
number or the references it names), or ``None`` when the guard refused it or every
number it needs is published perturbed (``"perturbed": true``: the true value plus an
unknown amount of at most 2, so the arithmetic carries the sum of those unknowns).

Used by ``tests/guard/test_exact_attacks.py`` (SQLite, tasks in-process) and
``tests/integration/test_exact_attacks_postgres.py`` (PostgreSQL, a real Celery worker).
"""

from __future__ import annotations

import csv
import io
import json
import re
import time
import zipfile
from dataclasses import dataclass
from typing import Any

from surveys.services import response_withdraw, responses_submit_bulk, survey_close
from tests.factories import Tenant, consultation_factory, survey_factory, tenant_factory

DISTRICTS = ["N", "S", "E", "W", "C"]
QUESTIONS = [
    {"key": "district", "type": "nominal", "categories": DISTRICTS, "mechanism": {"name": "none"}},
    {
        "key": "tenure",
        "type": "binary",
        "categories": ["own", "rent"],
        "mechanism": {"name": "none"},
    },
    {
        "key": "age",
        "type": "continuous",
        "range": [16, 100],
        "step": 1,
        "mechanism": {"name": "none"},
    },
    {"key": "item", "type": "binary", "categories": ["Y", "N"], "mechanism": {"name": "none"}},
]
OWNERS_OF_C = ["p-00438", "p-00439"]
THRESHOLD = 5


def residents() -> list[dict[str, Any]]:
    """The 440 residents (the issue's pool): references p-00000 ... p-00439."""
    people: list[tuple[str, str, float, str]] = []
    # District C: 38 renters ("N", aged 20-57); the two owners come last.
    people += [("C", "rent", 20.0 + i, "N") for i in range(38)]
    # District N: 99 residents, all "N" (so "N" in C and N leaves out exactly the owners).
    people += [("N", "rent" if i < 60 else "own", 18.0 + i % 70, "N") for i in range(99)]
    # S, E, W: 301 residents, 144 renters, answers mixed, nobody older than 90.
    for i in range(301):
        district = "SEW"[i % 3]
        people.append((district, "rent" if i < 144 else "own", 18.0 + i % 73, "YN"[i % 2]))
    people += [("C", "own", 95.0, "Y"), ("C", "own", 95.0, "Y")]
    assert len(people) == 440
    return [
        {
            "participant": f"p-{i:05d}",
            "answers": {"district": d, "tenure": t, "age": a, "item": y},
        }
        for i, (d, t, a, y) in enumerate(people)
    ]


@dataclass
class World:
    tenant: Tenant
    survey: Any

    def body(self, kind: str, **fields: Any) -> dict[str, Any]:
        return {"survey": self.survey.pk, "kind": kind, **fields}


def make_world() -> World:
    tenant = tenant_factory()
    survey = survey_factory(consultation_factory(tenant.organisation), questions=QUESTIONS)
    responses_submit_bulk(survey=survey, responses=residents())
    return World(tenant, survey)


def is_in(attribute: str, *labels: str) -> dict[str, Any]:
    return {"attribute": attribute, "op": "in", "value": list(labels)}


@dataclass
class Outcome:
    """A job's end: ``status`` (``refused`` also for a 400 up front), result, error text."""

    status: str
    result: dict[str, Any] | None
    error: str
    job_id: int | None = None

    @property
    def published(self) -> bool:
        return self.status == "succeeded" and self.result is not None

    @property
    def exact(self) -> bool:
        """Published without the cell-key perturbation (its numbers are the truth)."""
        return self.published and not (self.result or {}).get("perturbed", False)


def run(world: World, body: dict[str, Any], *, timeout: float = 120) -> Outcome:
    client = world.tenant.analyst
    response = client.post("/api/v1/analyses/", body, format="json")
    if response.status_code == 400:
        return Outcome("refused", None, json.dumps(response.json()))
    assert response.status_code == 202, response.content
    url = response.json()["url"]
    deadline = time.monotonic() + timeout
    while True:
        job = client.get(url).json()
        if job["status"] in ("succeeded", "failed", "refused"):
            break
        assert time.monotonic() < deadline, job
        time.sleep(0.2)
    assert job["status"] != "failed", job
    return Outcome(job["status"], job.get("result"), str(job.get("error") or ""), job["id"])


def count(world: World, *where: dict[str, Any]) -> Outcome:
    return run(world, world.body("count", where=list(where)))


def value(outcome: Outcome, key: str = "estimate") -> float:
    assert outcome.result is not None
    return float(outcome.result[key])


def small_numbers(text: str, threshold: int = THRESHOLD) -> list[str]:
    """Numbers below the threshold in a message (list indices such as ``strata[0]`` aside)."""
    text = re.sub(r"\[\d+\]", "", text)
    return [
        n for n in re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", text) if float(n) < threshold
    ]


# --------------------------------------------------------------------------- attacks 1-3


def attack_1_three_box_tracker(world: World) -> float | None:
    """count(C) + count(N) - count(item=N and district in {C, N}) = the 2 owners of C."""
    c = count(world, is_in("district", "C"))
    n = count(world, is_in("district", "N"))
    rest = count(world, is_in("item", "N"), is_in("district", "C", "N"))
    used = (c, n, rest)
    if not all(o.exact for o in used):
        return None
    return value(c) + value(n) - value(rest)


def attack_2_continuous_tracker(world: World) -> float | None:
    """The same with a threshold on age (age <= 94)."""
    c = count(world, is_in("district", "C"))
    n = count(world, is_in("district", "N"))
    young = count(
        world, {"attribute": "age", "op": "lte", "value": 94}, is_in("district", "C", "N")
    )
    if not all(o.exact for o in (c, n, young)):
        return None
    return value(c) + value(n) - value(young)


def attack_2_distribution_within_owners(world: World) -> float | None:
    """A distribution of district within owners hides C; owners minus the rest shows it."""
    run(world, world.body("distribution", attribute="district", where=[is_in("tenure", "own")]))
    owners = count(world, is_in("tenure", "own"))
    others = count(world, is_in("tenure", "own"), is_in("district", "N", "S", "E", "W"))
    if not all(o.exact for o in (owners, others)):
        return None
    return value(owners) - value(others)


def attack_2_age_histograms(world: World) -> dict[str, float] | None:
    """An exact age histogram overall minus the same within N, S, E and W: C's residents
    by age (1 at each age from 20 to 57) where both show a cell."""
    overall = run(world, world.body("distribution", attribute="age"))
    outside = run(
        world,
        world.body("distribution", attribute="age", where=[is_in("district", *"NSEW")]),
    )
    if not (overall.exact and outside.exact):
        return None  # refused, or perturbed cells: differences carry two unknown moves
    assert overall.result is not None and outside.result is not None
    small = {}
    for interval, a, b in zip(
        overall.result["intervals"], overall.result["counts"], outside.result["counts"], strict=True
    ):
        if a is not None and b is not None and a - b < THRESHOLD:
            small[str(interval)] = a - b
    return small or None


def attack_3_means(world: World) -> float | None:
    """Means over the tracker's groups: the sum of the hidden cell's ages (190: both 95)."""

    def mean(*where: dict[str, Any]) -> Outcome:
        return run(world, world.body("mean", attribute="age", where=list(where)))

    c = mean(is_in("district", "C"))
    n = mean(is_in("district", "N"))
    rest = mean(is_in("item", "N"), is_in("district", "C", "N"))
    if not all(o.exact for o in (c, n, rest)):
        return None
    return sum(sign * value(o) * value(o, "group_size") for sign, o in ((1, c), (1, n), (-1, rest)))


# --------------------------------------------------------------------------- attacks 4-5


def sample(world: World, size: int, *where: dict[str, Any], **fields: Any) -> Outcome:
    return run(world, world.body("sample", size=size, seed=7, where=list(where), **fields))


def attack_4_two_whole_pools(world: World) -> list[str] | None:
    """sample(C, 40) minus sample(renters, 242): the two owners of C, by name."""
    c = sample(world, 40, is_in("district", "C"))
    renters = sample(world, 242, is_in("tenure", "rent"))
    if not (c.published and renters.published):
        return None
    assert c.result is not None and renters.result is not None
    named = sorted(set(c.result["participants"]) - set(renters.result["participants"]))
    # Certain only when both samples list their whole pools.
    whole = len(c.result["participants"]) >= 40 and len(renters.result["participants"]) >= 242
    return named if whole else None


def attack_4_whole_stratum(world: World) -> list[str] | None:
    """A stratum as large as its pool lists every renter of C (count(C and rent) aside)."""
    strata = [
        {"where": [is_in("district", "C"), is_in("tenure", "rent")], "size": 38},
        {"where": [is_in("district", "N")], "size": 10},
    ]
    outcome = run(world, world.body("sample", size=48, seed=7, strata=strata))
    if not outcome.published:
        return None
    assert outcome.result is not None
    listed = outcome.result["strata"][0]
    return sorted(listed) if len(listed) == 38 else None


def attack_5_panel_probabilities(world: World) -> list[str] | None:
    """A panel of C with a quota on the item: the candidates whose probability stands
    apart from a group smaller than the threshold (the two owners' answer)."""
    body = world.body(
        "panel",
        size=10,
        reserves=0,
        seed=3,
        where=[is_in("district", "C")],
        quotas=[{"where": [is_in("item", "N")], "min": 10, "max": 10}],
    )
    outcome = run(world, body)
    if not outcome.published or outcome.job_id is None:
        return None
    response = world.tenant.analyst.get(f"/api/v1/analyses/{outcome.job_id}/probabilities.csv")
    if response.status_code != 200:
        return None
    text = (
        b"".join(response.streaming_content).decode()
        if response.streaming
        else response.content.decode()
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    by_value: dict[str, list[str]] = {}
    for row in rows:
        by_value.setdefault(row["selection_probability"], []).append(row["participant"])
    small = [refs for refs in by_value.values() if len(refs) < THRESHOLD]
    return sorted(ref for refs in small for ref in refs) or None


# --------------------------------------------------------------------------- attack 6


def attack_6_pool_size_oracle(world: World) -> str | None:
    """Two sample sizes around the pool: different refusals tell the pool's exact size,
    and so does a refusal that states it."""
    where = [{"attribute": "age", "op": "lte", "value": 94}]
    outcomes = [sample(world, size, *where) for size in (437, 438, 439, 440)]
    errors = {o.error for o in outcomes if not o.published}
    for o in outcomes:
        if re.search(r"\b43[5-9]\b|\b440\b", o.error):
            return "a refusal states the pool"
    published = [o for o in outcomes if o.published]
    refused = [o for o in outcomes if not o.published]
    if published and refused:
        # The largest published and the smallest refused size bracket the pool.
        return "the refusals switch at the pool's size"
    if len(errors) > 1:
        return "two kinds of refusal bracket the pool"
    return None


def attack_6_panel_relaxation(world: World) -> str | None:
    """An infeasible quota's 'smallest relaxation' on an exact attribute states a count
    (a panel of 20 with at most 17 "N" needs 3 "Y" in C, which holds 2: "0-17 -> 0-18")."""
    body = world.body(
        "panel",
        size=20,
        reserves=0,
        seed=3,
        where=[is_in("district", "C")],
        quotas=[{"where": [is_in("item", "N")], "min": 0, "max": 17}],
    )
    outcome = run(world, body)
    if outcome.published:
        return None
    if small_numbers(outcome.error) or re.search(r"\d\s*->", outcome.error):
        return outcome.error
    return None


# --------------------------------------------------------------------------- attack 7


def attack_7_withdrawal(world: World) -> dict[str, float] | None:
    """The same counts before and after one withdrawal: the withdrawn resident's
    district, tenure and answer."""
    queries = {
        "C": [is_in("district", "C")],
        "rent": [is_in("tenure", "rent")],
        "N-answer": [is_in("item", "N")],
    }
    before = {name: count(world, *where) for name, where in queries.items()}
    response_withdraw(survey=world.survey, participant="p-00000", actor="tests")
    after = {name: count(world, *where) for name, where in queries.items()}
    if not all(o.exact for o in [*before.values(), *after.values()]):
        return None
    return {name: value(before[name]) - value(after[name]) for name in queries}


def attack_7_late_submission(world: World) -> dict[str, float] | None:
    """The same with one late submission."""
    queries = {"C": [is_in("district", "C")], "rent": [is_in("tenure", "rent")]}
    before = {name: count(world, *where) for name, where in queries.items()}
    late = {"district": "C", "tenure": "rent", "age": 30.0, "item": "N"}
    responses_submit_bulk(
        survey=world.survey, responses=[{"participant": "p-late", "answers": late}]
    )
    after = {name: count(world, *where) for name, where in queries.items()}
    if not all(o.exact for o in [*before.values(), *after.values()]):
        return None
    return {name: value(after[name]) - value(before[name]) for name in queries}


# --------------------------------------------------------------------------- the export


def export_rows(world: World, survey: Any, exact: str) -> list[dict[str, str]] | None:
    """The researcher export's rows with the exact attributes ``exact`` (None if refused)."""
    response = world.tenant.analyst.get(
        f"/api/v1/surveys/{survey.pk}/export/", {"format": "csv", "exact": exact}
    )
    if response.status_code != 200:
        assert response.status_code == 400, response.content[:300]
        assert not small_numbers(response.json()["detail"].replace("min_cell = 5", ""))
        return None
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return list(csv.DictReader(io.StringIO(archive.read("data.csv").decode())))


def attack_8_two_exports(world: World) -> float | None:
    """Export district, then tenure (each alone has no combination below 5), and link the
    rows of the two exports on a distorted answer they share: C's owners are 2."""
    questions = [
        *QUESTIONS,
        {
            "key": "income",
            "type": "continuous",
            "range": [0, 20000],
            "mechanism": {"name": "additive_gaussian", "sigma": 800},
        },
    ]
    survey = survey_factory(consultation_factory(world.tenant.organisation), questions=questions)
    people = residents()
    for i, person in enumerate(people):
        person["answers"]["income"] = 1000.0 + 2.0 * i  # a distorted report, one each
    responses_submit_bulk(survey=survey, responses=people)
    survey_close(survey=survey, actor="tests")
    districts = export_rows(world, survey, "district")
    tenures = export_rows(world, survey, "tenure")
    if districts is None or tenures is None:
        return None
    tenure_of = {row["income"]: row["tenure"] for row in tenures}
    return float(
        sum(1 for row in districts if row["district"] == "C" and tenure_of[row["income"]] == "own")
    )


def attack_8_export_and_published_counts(world: World) -> float | None:
    """The export's exact margins (C: 40, N: 99) minus one published count: the tracker
    of attack 1 needs only its third count from the API."""
    survey_close(survey=world.survey, actor="tests")
    rows = export_rows(world, world.survey, "district")
    if rows is None:
        return None
    margins = {d: sum(1 for row in rows if row["district"] == d) for d in DISTRICTS}
    rest = count(world, is_in("item", "N"), is_in("district", "C", "N"))
    if not rest.exact:
        return None
    return margins["C"] + margins["N"] - value(rest)


ATTACKS = {
    "1-three-box-tracker": attack_1_three_box_tracker,
    "2-continuous-tracker": attack_2_continuous_tracker,
    "2-distribution-within-owners": attack_2_distribution_within_owners,
    "2-age-histograms": attack_2_age_histograms,
    "3-means": attack_3_means,
    "4-two-whole-pools": attack_4_two_whole_pools,
    "4-whole-stratum": attack_4_whole_stratum,
    "5-panel-probabilities": attack_5_panel_probabilities,
    "6-pool-size-oracle": attack_6_pool_size_oracle,
    "6-panel-relaxation": attack_6_panel_relaxation,
    "7-withdrawal": attack_7_withdrawal,
    "7-late-submission": attack_7_late_submission,
    "8-two-exports": attack_8_two_exports,
    "8-export-and-published-counts": attack_8_export_and_published_counts,
}
