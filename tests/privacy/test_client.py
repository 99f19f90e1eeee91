"""The simulation client (privacy.client): distortion statistics and validation.

Distortion is checked against the published channel (chi-square) and noise model
(Kolmogorov-Smirnov) with a seeded rng, so these tests are deterministic. The HTTP client
(consultation_client.PortalClient) is tested in clients/python/tests/.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from privacy.client import (
    distort_answers,
    distort_table,
    table_responses,
)
from privacy.mechanisms import negative_gaussian, negative_uniform, randomised_response

N = 100_000
ALPHA = 0.001

SCHEME = {
    "survey": 3,
    "status": "open",
    "questions": [
        {
            "key": "sex",
            "type": "binary",
            "categories": ["F", "M"],
            "mechanism": {"name": "randomised_response", "retain": 0.7},
            "channel": randomised_response(2, 0.7).tolist(),
            "epsilon": 0.847,
        },
        {
            "key": "satisfaction",
            "type": "ordinal",
            "categories": ["1", "2", "3", "4", "5"],
            "mechanism": {"name": "negative_uniform"},
            "channel": negative_uniform(5).tolist(),
        },
        {
            "key": "site",
            "type": "ordinal",
            "categories": list("ABCDEFG"),
            "mechanism": {"name": "negative_gaussian", "sigma": 1.5},
            "channel": negative_gaussian(7, 1.5).tolist(),
        },
        {
            "key": "skips_class",
            "type": "ordinal",
            "categories": ["never", "rarely", "often", "always"],
            "mechanism": {"name": "negative_manual"},
            "instruction": "Choose one answer that is NOT true for you.",
        },
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
            "mechanism": {"name": "additive_uniform", "half_width": 10},
        },
        {
            "key": "income",
            "type": "continuous",
            "range": [0, 20000],
            "mechanism": {"name": "additive_gaussian", "sigma": 800},
        },
        {
            "key": "hours",
            "type": "continuous",
            "range": [0, 80],
            "mechanism": {"name": "additive_laplace", "scale": 4},
        },
        {
            "key": "rooms",
            "type": "continuous",
            "range": [1, 9],
            "mechanism": {"name": "retention_replacement", "retain": 0.6},
        },
        {
            "key": "household",
            "type": "continuous",
            "range": [1, 12],
            "mechanism": {"name": "none"},
        },
    ],
}
QUESTIONS = {q["key"]: q for q in SCHEME["questions"]}


# --- distortion statistics ----------------------------------------------------------


@pytest.mark.parametrize("key", ["sex", "satisfaction", "site"])
def test_discrete_answers_follow_every_row_of_the_published_channel(key):
    question = QUESTIONS[key]
    categories = np.asarray(question["categories"])
    channel = np.asarray(question["channel"])
    rng = np.random.default_rng(20240601)
    true = np.repeat(categories, N // len(categories))
    sent = distort_table(SCHEME, {key: true}, rng)[key]
    for i, category in enumerate(categories):
        observed = np.array([(sent[true == category] == c).sum() for c in categories])
        possible = channel[i] > 0
        # A category the channel rules out (the truth, in a negative survey) never appears.
        assert observed[~possible].sum() == 0
        expected = channel[i][possible] * observed.sum()
        p_value = stats.chisquare(observed[possible], expected).pvalue
        assert p_value > ALPHA, f"{key}: row {category} p={p_value:.2g}, observed {observed}"


@pytest.mark.parametrize(
    ("key", "true_value", "noise"),
    [
        ("age", 40.0, stats.uniform(loc=-10, scale=20)),
        ("income", 2400.0, stats.norm(scale=800)),
        ("hours", 38.0, stats.laplace(scale=4)),
    ],
)
def test_additive_noise_has_the_published_distribution(key, true_value, noise):
    rng = np.random.default_rng(7)
    sent = distort_table(SCHEME, {key: np.full(N, true_value)}, rng)[key]
    p_value = stats.kstest(sent - true_value, noise.cdf).pvalue
    assert p_value > ALPHA, f"{key}: KS p={p_value:.2g}"


def test_retention_replacement_keeps_with_probability_retain_else_uniform_on_the_range():
    rng = np.random.default_rng(11)
    sent = distort_table(SCHEME, {"rooms": np.full(N, 3.0)}, rng)["rooms"]
    kept = int((sent == 3.0).sum())
    assert stats.binomtest(kept, N, 0.6).pvalue > ALPHA
    replaced = sent[sent != 3.0]
    assert stats.kstest(replaced, stats.uniform(loc=1, scale=8).cdf).pvalue > ALPHA


def test_answers_sent_as_they_are_for_none_and_manual_negative():
    rng = np.random.default_rng(0)
    answers = {"skips_class": "often", "tenure": "rent", "household": 3}
    assert distort_answers(SCHEME, answers, rng) == answers


def test_one_resident_gets_plain_json_values():
    sent = distort_answers(SCHEME, {"sex": "F", "age": 40, "site": "C"}, np.random.default_rng(3))
    assert type(sent["sex"]) is str and sent["sex"] in ("F", "M")
    assert type(sent["site"]) is str and sent["site"] != "C"
    assert type(sent["age"]) is float and 30 <= sent["age"] <= 50
    json.dumps(sent)


def test_the_same_seed_gives_the_same_table():
    columns = {"sex": ["F", "M"] * 50, "income": np.linspace(0, 20000, 100)}
    first = distort_table(SCHEME, columns, np.random.default_rng(5))
    second = distort_table(SCHEME, columns, np.random.default_rng(5))
    for key in columns:
        assert_array_equal(first[key], second[key])


def test_table_responses_builds_bulk_items():
    sent = {"sex": np.array(["F", "M"]), "age": np.array([40.5, 61.0])}
    assert table_responses(["p-1", "p-2"], sent) == [
        {"participant": "p-1", "answers": {"sex": "F", "age": 40.5}},
        {"participant": "p-2", "answers": {"sex": "M", "age": 61.0}},
    ]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"sex": ["F", "X"]}, r"question 'sex': unknown categories \['X'\]"),
        ({"sex": [0, 1]}, r"question 'sex': answers must be category labels"),
        ({"satisfaction": [3]}, r"category labels"),
        ({"age": [40.0, float("nan")]}, r"question 'age': answers must be finite numbers"),
        ({"age": [40.0, float("inf")]}, r"finite numbers"),
        ({"age": ["40"]}, r"question 'age': answers must be numbers"),
        ({"age": [120.0]}, r"outside the range \[16.0, 100.0\]"),
        ({"shoe_size": ["42"]}, r"unknown question 'shoe_size'"),
        ({"sex": ["F", "M"], "age": [40.0]}, r"equal length"),
    ],
)
def test_invalid_answers_are_refused_with_a_clear_message(columns, message):
    with pytest.raises(ValueError, match=message):
        distort_table(SCHEME, columns, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mechanism": {"name": "coin_flip"}}, r"unknown mechanism 'coin_flip'"),
        ({"channel": None}, r"must carry a 2x2 channel"),
        ({"channel": [[0.7, 0.2], [0.3, 0.7]]}, r"row 0 sums to"),
    ],
)
def test_a_broken_discrete_scheme_entry_is_refused(change, message):
    scheme = {"survey": 3, "questions": [{**QUESTIONS["sex"], **change}]}
    with pytest.raises(ValueError, match=message):
        distort_answers(scheme, {"sex": "F"}, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ({"name": "additive_cauchy", "scale": 1}, r"unknown noise model 'additive_cauchy'"),
        ({"name": "additive_gaussian", "sigma": -1}, r"sigma must be > 0"),
        ({"name": "additive_uniform"}, r"needs parameter"),
    ],
)
def test_a_broken_continuous_scheme_entry_is_refused(mechanism, message):
    scheme = {"survey": 3, "questions": [{**QUESTIONS["age"], "mechanism": mechanism}]}
    with pytest.raises(ValueError, match=f"question 'age': .*{message}"):
        distort_answers(scheme, {"age": 40}, np.random.default_rng(0))


def test_a_boolean_is_not_an_answer():
    with pytest.raises(ValueError, match="must be a category label or a number"):
        distort_answers(SCHEME, {"household": True}, np.random.default_rng(0))
