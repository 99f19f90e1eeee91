"""Shared body of the SQL-statistics property test (run on SQLite and on PostgreSQL)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import strategies as st

from consultations.models import Consultation
from reconstruction.algorithms import queries
from surveys import condition_counts, joint_counts, statistics, tallies
from surveys.ingest import this_hour
from surveys.models import Answer, Participant, Question, Response, Survey
from tests.factories import consultation_factory, organisation_factory, survey_factory

PROFILE = [
    {
        "key": "sex",
        "type": "binary",
        "categories": ["F", "M"],
        "mechanism": {"name": "randomised_response", "retain": 0.7},
    },
    {
        "key": "age",
        "type": "continuous",
        "range": [16, 100],
        "mechanism": {"name": "additive_uniform", "half_width": 10},
    },
]
OPINION = [
    {
        "key": "score",
        "type": "continuous",
        "range": [0, 10],
        "mechanism": {"name": "additive_gaussian", "sigma": 2},
    },
]

# One participant: profile answers (or None: no profile response), an opinion score,
# whether each response was withdrawn.
participant = st.tuples(
    st.one_of(st.none(), st.tuples(st.integers(0, 1), st.floats(0, 120, width=32))),
    st.floats(-8, 18, width=32),
    st.booleans(),
    st.booleans(),
)
edges = st.lists(st.floats(0, 120, width=32), min_size=0, max_size=8, unique=True).map(sorted)


def world() -> tuple[Consultation, Survey, Survey]:
    consultation = consultation_factory(organisation_factory())
    profile = survey_factory(consultation, questions=PROFILE, title="Profile")
    opinion = survey_factory(consultation, kind="opinion", questions=OPINION, title="Opinion")
    return consultation, profile, opinion


def store(
    consultation: Consultation, profile: Survey, opinion: Survey, people: list[Any]
) -> dict[str, np.ndarray]:
    """Store the participants; return the columns numpy should count (who counts)."""
    Participant.objects.filter(consultation=consultation).delete()
    questions = {q.key: q for q in Question.objects.filter(survey__in=[profile, opinion])}
    now = this_hour()
    columns: dict[str, list[float]] = {"sex": [], "age": [], "score": []}
    for index, (answers, score, profile_withdrawn, opinion_withdrawn) in enumerate(people):
        person = Participant.objects.create(consultation=consultation, reference=f"p{index}")
        if answers is not None:
            response = Response.objects.create(
                survey=profile,
                participant=person,
                submitted_at=now,
                withdrawn_at=now if profile_withdrawn else None,
            )
            Answer.objects.create(
                response=response, question=questions["sex"], code=answers[0], n_categories=2
            )
            Answer.objects.create(
                response=response, question=questions["age"], value=answers[1], n_categories=0
            )
        response = Response.objects.create(
            survey=opinion,
            participant=person,
            submitted_at=now,
            withdrawn_at=now if opinion_withdrawn else None,
        )
        Answer.objects.create(
            response=response, question=questions["score"], value=score, n_categories=0
        )
        if answers is not None and not profile_withdrawn and not opinion_withdrawn:
            columns["sex"].append(answers[0])
            columns["age"].append(answers[1])
            columns["score"].append(score)
    return {key: np.asarray(values, dtype=np.float64) for key, values in columns.items()}


def check_sql_equals_numpy(
    consultation: Consultation,
    profile: Survey,
    opinion: Survey,
    people: list[Any],
    inner: list[float],
    using: str = "default",
) -> None:
    """Counts, sums and sums of squares from SQL equal numpy's on the same data."""
    columns = store(consultation, profile, opinion, people)
    questions = {q.key: q for q in Question.objects.filter(survey__in=[profile, opinion])}
    ordered = [questions["sex"], questions["age"], questions["score"]]
    n = statistics.participant_count(opinion, ordered, using=using)
    assert n == columns["sex"].size
    cut = np.asarray(inner, dtype=np.float64)
    counted = statistics.cell_statistics(
        opinion,
        [statistics.Axis(questions["sex"]), statistics.Axis(questions["age"], cut)],
        target=questions["score"],
        using=using,
    )
    shape = (2, cut.size + 1)
    expected = np.zeros(shape)
    sums = np.zeros(shape)
    squares = np.zeros(shape)
    bins = queries.cell_index(columns["age"], np.concatenate([[-np.inf], cut, [np.inf]]))
    np.add.at(expected, (columns["sex"].astype(int), bins), 1)
    np.add.at(sums, (columns["sex"].astype(int), bins), columns["score"])
    np.add.at(squares, (columns["sex"].astype(int), bins), columns["score"] ** 2)
    np.testing.assert_array_equal(counted.counts, expected)
    # The same GROUP BY, occupied cells only (a panel's type count reads it).
    cells, occupied = statistics.occupied_cells(
        opinion,
        [statistics.Axis(questions["sex"]), statistics.Axis(questions["age"], cut)],
        using=using,
    )
    dense = np.zeros(shape)
    dense[tuple(cells.T)] = occupied
    np.testing.assert_array_equal(dense, expected)
    assert cells.shape == (int((expected > 0).sum()), 2) and bool((occupied > 0).all())
    assert counted.sums is not None and counted.squares is not None
    np.testing.assert_allclose(counted.sums, sums, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(counted.squares, squares, rtol=1e-9, atol=1e-6)
    # The naive count (reported answers meeting a condition) is one SQL COUNT too.
    if cut.size:
        threshold = float(cut[0])
        hits = condition_counts.condition_count(
            opinion,
            ordered,
            [(questions["sex"], "in", {1}), (questions["age"], "gt", threshold)],
            using=using,
        )
        assert hits == int(np.sum((columns["sex"] == 1) & (columns["age"] > threshold)))
    # The naive mean's moments (count, sum, sum of squares of the target over the
    # participants whose reported answers meet the condition): one SQL aggregate.
    low, high = (float(cut[0]), float(cut[-1])) if cut.size else (20.0, 60.0)
    for where, selected in (
        (
            [(questions["sex"], "in", {0}), (questions["age"], "lte", high)],
            (columns["sex"] == 0) & (columns["age"] <= high),
        ),
        (
            [(questions["age"], "between", (low, high))],
            (columns["age"] >= low) & (columns["age"] < high),
        ),
    ):
        moments = condition_counts.condition_moments(
            opinion, ordered, where, target=questions["score"], using=using
        )
        chosen = columns["score"][selected]
        assert moments.count == int(selected.sum())
        assert moments.total == pytest.approx(float(chosen.sum()), rel=1e-9, abs=1e-6)
        assert moments.squares == pytest.approx(float(chosen @ chosen), rel=1e-9, abs=1e-6)
    # The whole-number test's histogram: each continuous question's reports in half
    # units (floor(2 value), negative values included) and how many are not whole, over
    # the participants who answered every question (one GROUP BY each).
    for key in ("age", "score"):
        halves = statistics.half_unit_counts(opinion, questions[key], require=ordered, using=using)
        units, tally = np.unique(np.floor(2 * columns[key]).astype(int), return_counts=True)
        assert halves.counts == dict(zip(units.tolist(), tally.tolist(), strict=True))
        assert halves.fractional == int(np.sum(columns[key] != np.floor(columns[key])))
    # A joint count's whole-number tests and cell tables from one scan (PostgreSQL:
    # GROUPING SETS) equal one query each.
    joint = [
        [statistics.Axis(questions["sex"]), statistics.Axis(questions["age"], cut)],
        [statistics.Axis(questions["age"], cut[:1])],
    ]
    tested = [questions["age"], questions["score"]]
    counted, units = joint_counts.cell_counts_and_half_units(
        opinion, joint, tested, require=ordered, using=using
    )
    for axes, counts in zip(joint, counted, strict=True):
        alone = statistics.cell_statistics(opinion, axes, require=ordered, using=using).counts
        np.testing.assert_array_equal(counts, alone)
    for question in tested:
        assert units[question.pk] == statistics.half_unit_counts(
            opinion, question, require=ordered, using=using
        )
    # The same on the profile survey's own answers, whose withdrawn responses are left
    # out by an anti-join only when it has any (surveys/joins.py).
    live = [a for a, _, pw, _ in people if a is not None and not pw]
    sexes = np.asarray([a[0] for a in live], dtype=int)
    ages = np.asarray([a[1] for a in live], dtype=np.float64)
    own = [questions["sex"], questions["age"]]
    assert statistics.participant_count(profile, own, using=using) == len(live)
    # (One GROUP BY there: the ages in half units, and the cut at edges that are not
    # multiples of a half as a column of its own; surveys/joint_counts.py.)
    halved = np.unique(np.floor(2 * cut) / 2)
    counted, units = joint_counts.cell_counts_and_half_units(
        profile,
        [joint[0], [statistics.Axis(questions["sex"]), statistics.Axis(questions["age"], halved)]],
        [questions["age"]],
        require=own,
        using=using,
    )
    for edges, got in ((cut, counted[0]), (halved, counted[1])):
        expected = np.zeros((2, edges.size + 1))
        np.add.at(
            expected,
            (sexes, queries.cell_index(ages, np.concatenate([[-np.inf], edges, [np.inf]]))),
            1,
        )
        np.testing.assert_array_equal(got, expected)
    own_units, own_tally = np.unique(np.floor(2 * ages).astype(int), return_counts=True)
    assert units[questions["age"].pk] == statistics.HalfUnits(
        dict(zip(own_units.tolist(), own_tally.tolist(), strict=True)),
        int(np.sum(ages != np.floor(ages))),
    )
    # A report's statistics: every question of a survey in one GROUP BY (codes, who
    # answered, and the continuous values cut at the given edges).
    report = [questions["sex"], questions["age"]]
    totals = statistics.question_tables(profile, report, using=using)
    np.testing.assert_array_equal(totals[questions["sex"].pk], np.bincount(sexes, minlength=2))
    np.testing.assert_array_equal(totals[questions["age"].pk], [ages.size])
    binned = statistics.question_tables(
        profile, report, inner_edges={questions["age"].pk: cut}, using=using
    )
    age_bins = queries.cell_index(ages, np.concatenate([[-np.inf], cut, [np.inf]]))
    np.testing.assert_array_equal(
        binned[questions["age"].pk], np.bincount(age_bins, minlength=cut.size + 1)
    )
    np.testing.assert_array_equal(binned[questions["sex"].pk], totals[questions["sex"].pk])
    # Sampling's candidates: only the wanted cells' participants, each with their
    # position in the full participant-ordered stream.
    streamed = [
        (ids, block)
        for ids, block in statistics.iter_attribute_columns(opinion, ordered, using=using)
    ]
    if streamed:
        ids = np.concatenate([i for i, _ in streamed])
        sex = np.concatenate([b[questions["sex"].pk] for _, b in streamed])
        age = np.concatenate([b[questions["age"].pk] for _, b in streamed])
        flat = sex * (cut.size + 1) + queries.cell_index(
            age, np.concatenate([[-np.inf], cut, [np.inf]])
        )
        wanted = sorted(set(flat.tolist()[::2]))
        axes = [statistics.Axis(questions["sex"]), statistics.Axis(questions["age"], cut)]
        found = list(
            statistics.iter_candidates(opinion, ordered, axes, wanted, using=using, chunk=3)
        )
        positions = np.concatenate([p for _, p, _, _ in found])
        assert {t for t, _, _, _ in found} == {ids.size}
        np.testing.assert_array_equal(positions, np.flatnonzero(np.isin(flat, wanted)))
        np.testing.assert_array_equal(np.concatenate([i for _, _, i, _ in found]), ids[positions])
        np.testing.assert_array_equal(
            np.concatenate([b[questions["score"].pk] for _, _, _, b in found]),
            np.concatenate([b[questions["score"].pk] for _, b in streamed])[positions],
        )
    # Several tables from one scan (PostgreSQL: GROUPING SETS) equal one query each,
    # and several sampling passes from one scan equal one pass each.
    axes_sets = [
        [statistics.Axis(questions["sex"]), statistics.Axis(questions["age"], cut)],
        [statistics.Axis(questions["age"], cut)],
        [statistics.Axis(questions["sex"])],
        [statistics.Axis(questions["age"], cut[:1])],
        [statistics.Axis(questions["age"], cut), statistics.Axis(questions["sex"])],
    ]
    many = statistics.cell_counts_many(opinion, axes_sets, require=ordered, using=using)
    for axes, counts in zip(axes_sets, many, strict=True):
        alone = statistics.cell_statistics(opinion, axes, require=ordered, using=using).counts
        np.testing.assert_array_equal(counts, alone)
    if axes_sets[0] and columns["sex"].size:
        np.testing.assert_array_equal(many[1], many[0].sum(axis=0))
    size = cut.size + 1
    passes = [
        ([statistics.Axis(questions["sex"]), statistics.Axis(questions["age"], cut)], [1, size]),
        ([statistics.Axis(questions["age"], cut)], list(range(0, size, 2))),
        ([statistics.Axis(questions["sex"])], []),
    ]
    for chosen in (passes, [*passes, ([], None)]):
        merged = list(
            statistics.iter_candidates_many(opinion, ordered, chosen, using=using, chunk=4)
        )
        for number, (axes, wanted) in enumerate(chosen):
            alone = list(
                statistics.iter_candidates(opinion, ordered, axes, wanted, using=using, chunk=5)
            )
            got = [(t, p[h[:, number]], i[h[:, number]]) for t, p, i, _b, h in merged]
            expected_positions = np.concatenate([p for _, p, _, _ in alone] or [np.zeros(0)])
            found_positions = np.concatenate([p for _, p, _ in got] or [np.zeros(0)])
            np.testing.assert_array_equal(found_positions, expected_positions)
            np.testing.assert_array_equal(
                np.concatenate([i for _, _, i in got] or [np.zeros(0)]),
                np.concatenate([i for _, _, i, _ in alone] or [np.zeros(0)]),
            )
            assert {t for t, _, _, _ in alone} <= {t for t, _, _ in got}
    # The response tallies, recounted from the stored answers, equal numpy's counts.
    tallies.rebuild(using=using)
    live_profile = [a is not None and not pw for a, _, pw, _ in people]
    live_opinion = [not ow for _, _, _, ow in people]
    responses, answers = tallies.live_counts(
        [profile.pk, opinion.pk], [q.pk for q in ordered], using=using
    )
    assert responses == {profile.pk: sum(live_profile), opinion.pk: sum(live_opinion)}
    assert answers == {
        questions["sex"].pk: sum(live_profile),
        questions["age"].pk: sum(live_profile),
        questions["score"].pk: sum(live_opinion),
    }
