"""The reads the analysis engine consumes: arrays, counts, channels, noise, joined tables."""

from __future__ import annotations

import numpy as np
import pytest

from privacy.mechanisms import negative_gaussian, randomised_response
from surveys.selectors import (
    attribute_question,
    attribute_table,
    question_channel,
    question_codes,
    question_noise,
    question_values,
    reported_code_counts,
    survey_response_count,
)
from surveys.services import calibration_upload, response_withdraw, responses_submit_bulk
from tests.factories import good_answers, survey_factory


def _fill(survey, references, offset=0):
    responses_submit_bulk(
        survey=survey,
        responses=[
            {"participant": ref, "answers": good_answers(offset + i)}
            for i, ref in enumerate(references)
        ],
    )


def test_codes_values_and_counts_of_live_responses(survey):
    _fill(survey, [f"p{i}" for i in range(12)])
    district = survey.questions.get(key="district")
    age = survey.questions.get(key="age")
    codes = question_codes(district)
    assert codes.dtype == np.int64
    np.testing.assert_array_equal(codes, [i % 5 for i in range(12)])
    np.testing.assert_array_equal(reported_code_counts(district), np.bincount(codes, minlength=5))
    values = question_values(age)
    assert values.dtype == np.float64
    np.testing.assert_array_equal(values, [16.0 + i for i in range(12)])
    assert survey_response_count(survey) == 12

    response_withdraw(survey=survey, participant="p0")
    assert survey_response_count(survey) == 11
    np.testing.assert_array_equal(reported_code_counts(district), [2, 3, 2, 2, 2])
    assert len(question_values(age)) == 11
    assert 16.0 not in question_values(age)


def test_counts_have_length_k_even_for_unreported_categories(survey):
    _fill(survey, ["only"])
    counts = reported_code_counts(survey.questions.get(key="site"))
    np.testing.assert_array_equal(counts, [1, 0, 0, 0, 0, 0, 0])


def test_wrong_kind_of_question_is_a_value_error(survey):
    age = survey.questions.get(key="age")
    sex = survey.questions.get(key="sex")
    with pytest.raises(ValueError, match="continuous"):
        question_codes(age)
    with pytest.raises(ValueError, match="discrete"):
        question_values(sex)
    with pytest.raises(ValueError):
        question_channel(age)
    with pytest.raises(ValueError):
        question_noise(sex)


def test_channels_for_every_discrete_mechanism(survey):
    by_key = {q.key: q for q in survey.questions.all()}
    np.testing.assert_allclose(question_channel(by_key["sex"]), randomised_response(2, 0.7))
    np.testing.assert_allclose(question_channel(by_key["tenure"]), np.eye(2))
    np.testing.assert_allclose(question_channel(by_key["site"]), negative_gaussian(7, 1.5))
    np.testing.assert_allclose(question_channel(by_key["satisfaction"]), (1 - np.eye(5)) / 4)
    np.testing.assert_allclose(question_channel(by_key["skips_class"]), (1 - np.eye(4)) / 3)
    calibration_upload(survey=survey, question="skips_class", pairs=[["rarely", "never"]])
    np.testing.assert_allclose(question_channel(by_key["skips_class"])[1], [1, 0, 0, 0])


def test_noise_models_give_the_reported_bounds(survey):
    age = survey.questions.get(key="age")
    income = survey.questions.get(key="income")
    assert question_noise(age).reported_bounds(16, 100) == (6, 110)
    assert question_noise(income).reported_bounds(0, 20000) == (-8000, 28000)


def test_attribute_table_aligns_columns_by_participant(survey):
    _fill(survey, ["c", "a", "b"])
    table = attribute_table(survey, ["sex", "age"])
    assert list(table.participants) == ["c", "a", "b"]  # by internal id: submission order
    np.testing.assert_array_equal(table.columns["sex"], [0, 1, 0])
    np.testing.assert_array_equal(table.columns["age"], [16.0, 17.0, 18.0])
    assert len(table) == 3
    with pytest.raises(ValueError, match="unknown attribute"):
        attribute_table(survey, ["nope"])


def test_attribute_table_joins_the_profile_survey_on_the_participant(consultation, survey):
    opinion = survey_factory(
        consultation,
        kind="opinion",
        questions=[
            {
                "key": "school_site",
                "type": "nominal",
                "categories": ["north", "south", "east"],
                "mechanism": {"name": "negative_uniform"},
            }
        ],
    )
    _fill(survey, ["p1", "p2", "p3", "p4"])  # sex F, M, F, M; age 16..19
    responses_submit_bulk(
        survey=opinion,
        responses=[
            {"participant": "p4", "answers": {"school_site": "east"}},
            {"participant": "p2", "answers": {"school_site": "north"}},
            {"participant": "outsider", "answers": {"school_site": "south"}},
        ],
    )
    assert attribute_question(opinion, "sex").survey_id == survey.pk
    table = attribute_table(opinion, ["school_site", "sex", "age"])
    order = np.argsort(table.participants)
    assert list(table.participants[order]) == ["p2", "p4"]  # inner join
    np.testing.assert_array_equal(table.columns["school_site"][order], [0, 2])
    np.testing.assert_array_equal(table.columns["sex"][order], [1, 1])
    np.testing.assert_array_equal(table.columns["age"][order], [17.0, 19.0])

    response_withdraw(survey=survey, participant="p4")
    assert list(attribute_table(opinion, ["sex"]).participants) == ["p2"]
    # A profile survey does not look into opinion surveys.
    with pytest.raises(ValueError):
        attribute_table(survey, ["school_site"])


def test_attribute_table_without_keys_lists_the_participants(survey):
    _fill(survey, ["x", "y"])
    table = attribute_table(survey, [])
    assert list(table.participants) == ["x", "y"]
    assert table.columns == {}
