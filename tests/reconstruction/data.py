"""A distorted consultation of simulated residents, built through the services.

``distorted_consultation(organisation, n=3000)`` creates a consultation with a
profile survey (sex, district, children, age, income) and an opinion survey
(satisfaction, site, attendance, housing, pilot), simulates ``n`` residents
with correlated attributes (:func:`simulate_candidates`), distorts their true
answers with the published schemes as a portal would (:func:`distort_table`)
and submits them with :func:`responses_submit_bulk`. The returned
:class:`Consultation` keeps the truth beside the ids, so tests can check the
reconstructions against it.

Two opinion questions exist for disclosure control:

- ``housing`` has no distortion and fixed true counts ``HOUSING_COUNTS`` scaled
  to ``n``, with two tiny cells (``7`` and ``3`` residents), so suppression is
  exact and predictable;
- ``pilot`` is optional and answered by only ``PILOT_ANSWERS`` residents
  (fewer than the default ``min_responses`` of 10).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from consultations.models import Consultation as ConsultationModel
from consultations.models import Organisation
from consultations.services import consultation_create
from privacy.client import distort_table, table_responses
from reconstruction.algorithms.simulation import (
    AGE_RANGE,
    CHILDREN,
    DISTRICTS,
    INCOME_RANGE,
    SEXES,
    CandidatePool,
    simulate_candidates,
)
from surveys.models import Survey
from surveys.selectors import survey_scheme
from surveys.services import responses_submit_bulk, survey_create, survey_open

SATISFACTION = ("1", "2", "3", "4", "5")
SITES = ("A", "B", "C", "D", "E", "F", "G")
ATTENDANCE = ("never", "rarely", "often", "always")
HOUSING = ("own", "rent", "boat", "tent")
PILOT = ("yes", "no")
PILOT_ANSWERS = 6
# The two last cells are tiny whatever n is: 7 live on a boat, 3 in a tent.
SMALL_HOUSING = (7, 3)

DISTRICT_CHANNEL = [
    [0.60, 0.10, 0.10, 0.10, 0.10],
    [0.10, 0.60, 0.10, 0.10, 0.10],
    [0.05, 0.05, 0.70, 0.10, 0.10],
    [0.10, 0.10, 0.10, 0.60, 0.10],
    [0.10, 0.05, 0.05, 0.10, 0.70],
]

PROFILE_QUESTIONS: list[dict[str, Any]] = [
    {
        "key": "sex",
        "text": "Sex",
        "type": "binary",
        "categories": list(SEXES),
        "mechanism": {"name": "randomised_response", "retain": 0.75},
    },
    {
        "key": "district",
        "text": "District",
        "type": "nominal",
        "categories": list(DISTRICTS),
        "mechanism": {"name": "randomised_response", "matrix": DISTRICT_CHANNEL},
    },
    {
        "key": "children",
        "text": "Children at home",
        "type": "binary",
        "categories": list(CHILDREN),
        "mechanism": {"name": "randomised_response", "retain": 0.8},
    },
    {
        "key": "age",
        "text": "Age",
        "type": "continuous",
        "range": list(AGE_RANGE),
        "mechanism": {"name": "additive_uniform", "half_width": 10},
    },
    {
        "key": "income",
        "text": "Monthly income",
        "type": "continuous",
        "range": list(INCOME_RANGE),
        "mechanism": {"name": "additive_gaussian", "sigma": 800},
    },
]
OPINION_QUESTIONS: list[dict[str, Any]] = [
    {
        "key": "satisfaction",
        "text": "Satisfied with the plans?",
        "type": "ordinal",
        "categories": list(SATISFACTION),
        "mechanism": {"name": "negative_uniform"},
    },
    {
        "key": "site",
        "text": "Preferred site",
        "type": "ordinal",
        "categories": list(SITES),
        "mechanism": {"name": "negative_gaussian", "sigma": 1.5},
    },
    {
        "key": "attendance",
        "text": "Council meetings attended",
        "type": "ordinal",
        "categories": list(ATTENDANCE),
        "mechanism": {"name": "negative_manual"},
    },
    {
        "key": "housing",
        "text": "Housing",
        "type": "nominal",
        "categories": list(HOUSING),
        "mechanism": {"name": "none"},
    },
    {
        "key": "pilot",
        "text": "Joined the pilot?",
        "type": "binary",
        "categories": list(PILOT),
        "required": False,
        "mechanism": {"name": "none"},
    },
]


@dataclass
class Consultation:
    """The stored consultation and the truth behind its distorted answers."""

    consultation: ConsultationModel
    profile: Survey
    opinion: Survey
    pool: CandidatePool
    opinions: dict[str, np.ndarray]  # true codes by opinion question key
    participants: np.ndarray  # references, row i is resident i

    @property
    def n(self) -> int:
        return self.pool.n

    def index_of(self, references: list[str]) -> np.ndarray:
        """Rows of the truth for participant references ``r-000123``."""
        return np.array([int(ref.split("-")[1]) for ref in references], dtype=np.intp)

    def true_counts(self, key: str, k: int) -> np.ndarray:
        return np.bincount(self.opinions[key], minlength=k).astype(float)


def keys_moving_every_cell_up(survey: Survey, key: str) -> None:
    """Fix the record keys of ``survey``'s responses: 0 but one per category of ``key``
    (0xFFFF0000), so each category's cell key (and the question's total's) reads
    0.9999, the perturbation table's +2.

    Record keys are random (issue 26), and a test that asserts which cells of an exact
    question are hidden near the threshold (the tiny ``boat`` and ``tent`` cells, and
    whether their hidden sum needs a third cell hidden with them) would otherwise pass or
    fail by chance."""
    from surveys.models import Answer, Response

    Response.objects.filter(survey=survey).update(record_key=0)
    first: dict[int, int] = {}
    answers = Answer.objects.filter(question__survey=survey, question__key=key)
    for response_id, code in answers.values_list("response_id", "code"):
        first.setdefault(code, response_id)
    Response.objects.filter(pk__in=list(first.values())).update(record_key=0xFFFF0000)


def _opinions(pool: CandidatePool, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Opinions that depend on the profile, so cross-survey conditions matter."""
    n = pool.n
    # Every category is common (over 500 of 3000), so no published cell is suppressed.
    base = 1.7 + 1.0 * pool.children - 0.5 * (pool.district == 4) + rng.normal(0, 1.6, n)
    satisfaction = np.clip(np.round(base), 0, 4).astype(np.intp)
    site = np.clip(np.round(pool.district * 1.4 + rng.normal(0, 1.2, n)), 0, 6).astype(np.intp)
    attendance = np.clip(np.round((pool.age - 16) / 28 + rng.normal(0, 0.8, n)), 0, 3)
    housing = np.zeros(n, dtype=np.intp)
    small = sum(SMALL_HOUSING)
    housing[: (n - small) * 2 // 5] = 1
    housing[n - small : n - SMALL_HOUSING[1]] = 2
    housing[n - SMALL_HOUSING[1] :] = 3
    return {
        "satisfaction": satisfaction,
        "site": site,
        "attendance": attendance.astype(np.intp),
        "housing": rng.permutation(housing),
    }


def _submit(survey: Survey, responses: list[dict[str, Any]]) -> None:
    for start in range(0, len(responses), 10_000):
        responses_submit_bulk(
            survey=survey, responses=responses[start : start + 10_000], actor="tests"
        )


def distorted_consultation(
    organisation: Organisation,
    *,
    n: int = 3000,
    seed: int = 2026,
    min_responses: int = 10,
    min_cell: int = 5,
) -> Consultation:
    """Create, distort and submit a consultation of ``n`` simulated residents."""
    rng = np.random.default_rng(seed)
    consultation = consultation_create(
        organisation=organisation,
        title=f"Simulated consultation ({n} residents)",
        min_responses=min_responses,
        min_cell=min_cell,
        actor="tests",
    )
    profile = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Candidate registration",
        questions=PROFILE_QUESTIONS,
        actor="tests",
    )
    opinion = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="opinion",
        title="School plans",
        questions=OPINION_QUESTIONS,
        actor="tests",
    )
    profile = survey_open(survey=profile, actor="tests")
    opinion = survey_open(survey=opinion, actor="tests")

    pool = simulate_candidates(n, rng=rng)
    opinions = _opinions(pool, rng)
    participants = np.array([f"r-{i:06d}" for i in range(n)])

    sent_profile = distort_table(
        survey_scheme(profile),
        {
            "sex": np.array(SEXES)[pool.sex],
            "district": np.array(DISTRICTS)[pool.district],
            "children": np.array(CHILDREN)[pool.children],
            "age": pool.age,
            "income": pool.income,
        },
        rng,
    )
    # negative_manual: the resident sends a category that is not theirs (uniformly here,
    # which is also the channel the server assumes without calibration data).
    attendance = opinions["attendance"]
    negative = (attendance + rng.integers(1, len(ATTENDANCE), size=n)) % len(ATTENDANCE)
    sent_opinion = distort_table(
        survey_scheme(opinion),
        {
            "satisfaction": np.array(SATISFACTION)[opinions["satisfaction"]],
            "site": np.array(SITES)[opinions["site"]],
            "attendance": np.array(ATTENDANCE)[negative],
            "housing": np.array(HOUSING)[opinions["housing"]],
        },
        rng,
    )
    _submit(profile, table_responses(participants, sent_profile))
    opinion_responses = table_responses(participants, sent_opinion)
    for row in range(PILOT_ANSWERS):
        opinion_responses[row]["answers"]["pilot"] = PILOT[row % 2]
    _submit(opinion, opinion_responses)
    return Consultation(
        consultation=consultation,
        profile=profile,
        opinion=opinion,
        pool=pool,
        opinions=opinions,
        participants=participants,
    )
