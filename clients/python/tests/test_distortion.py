"""consultation_client's distortion: it follows the published channel and noise, and refuses
bad input naming the question.

The statistical tests draw from a seeded ``random.Random`` so they are deterministic; they
compare with the channel by a chi-square test and with the noise by a Kolmogorov-Smirnov test
at alpha = 0.001 (critical values hard-coded: the package needs no scipy).
"""

from __future__ import annotations

import math
import random
import sys

import consultation_client as client
import pytest
from consultation_client import distort_answer, distort_answers, localise_question

N = 20_000
# Upper 0.001 critical values of chi-square, df = 1..6 (NIST/SEMATECH e-Handbook, 1.3.6.7.4).
CHI2_0_001 = [math.nan, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458]
KS_0_001 = 1.9495 / math.sqrt(N)

SEX = {
    "key": "sex",
    "type": "binary",
    "text": "Sex",
    "categories": ["F", "M"],
    "mechanism": {"name": "randomised_response", "retain": 0.7},
    "channel": [[0.7, 0.3], [0.3, 0.7]],
    "translations": {"de": {"text": "Geschlecht", "labels": ["weiblich", "männlich"]}},
}
SATISFACTION = {
    "key": "satisfaction",
    "type": "ordinal",
    "categories": ["1", "2", "3", "4"],
    "mechanism": {"name": "negative_uniform"},
    "channel": [[0 if i == j else 1 / 3 for j in range(4)] for i in range(4)],
}
AGE = {
    "key": "age",
    "type": "continuous",
    "range": [16, 100],
    "mechanism": {"name": "additive_uniform", "half_width": 10},
}
SCHEME = {"survey": 3, "status": "open", "questions": [SEX, SATISFACTION, AGE]}


def chi_square(observed, probabilities):
    statistic, cells = 0.0, 0
    for j, p in enumerate(probabilities):
        if p == 0:
            assert observed.get(j, 0) == 0, f"category {j} has probability 0 but was reported"
            continue
        statistic += (observed.get(j, 0) - N * p) ** 2 / (N * p)
        cells += 1
    return statistic, cells - 1


@pytest.mark.parametrize("question", [SEX, SATISFACTION], ids=lambda q: q["key"])
def test_discrete_answers_follow_every_row_of_the_published_channel(question):
    rng = random.Random(1)
    for i, true in enumerate(question["categories"]):
        counts: dict[int, int] = {}
        for _ in range(N):
            reported = question["categories"].index(distort_answer(question, true, rng=rng))
            counts[reported] = counts.get(reported, 0) + 1
        statistic, df = chi_square(counts, question["channel"][i])
        assert statistic < CHI2_0_001[df], (true, counts)


def ks_statistic(samples, cdf):
    samples = sorted(samples)
    n = len(samples)
    return max(max((k + 1) / n - cdf(x), cdf(x) - k / n) for k, x in enumerate(samples))


def normal_cdf(x, sigma):
    return 0.5 * (1 + math.erf(x / (sigma * math.sqrt(2))))


def laplace_cdf(x, scale):
    return 0.5 * math.exp(x / scale) if x < 0 else 1 - 0.5 * math.exp(-x / scale)


@pytest.mark.parametrize(
    ("mechanism", "cdf"),
    [
        ({"name": "additive_uniform", "half_width": 10}, lambda x: min(1, max(0, (x + 10) / 20))),
        ({"name": "additive_gaussian", "sigma": 3.0}, lambda x: normal_cdf(x, 3.0)),
        ({"name": "additive_laplace", "scale": 2.0}, lambda x: laplace_cdf(x, 2.0)),
    ],
    ids=lambda v: v["name"] if isinstance(v, dict) else "",
)
def test_additive_noise_has_the_published_distribution(mechanism, cdf):
    question = {**AGE, "mechanism": mechanism}
    rng = random.Random(2)
    noise = [distort_answer(question, 50.0, rng=rng) - 50.0 for _ in range(N)]
    assert ks_statistic(noise, cdf) < KS_0_001


def test_retention_replacement_keeps_with_probability_retain_else_uniform_on_the_range():
    question = {**AGE, "mechanism": {"name": "retention_replacement", "retain": 0.6}}
    rng = random.Random(3)
    sent = [distort_answer(question, 40.0, rng=rng) for _ in range(N)]
    kept = sum(value == 40.0 for value in sent)
    # Binomial(N, 0.6): 4 standard deviations.
    assert abs(kept - 0.6 * N) < 4 * math.sqrt(N * 0.6 * 0.4)
    replaced = [value for value in sent if value != 40.0]
    assert min(replaced) >= 16 and max(replaced) <= 100
    assert ks_statistic(replaced, lambda x: (x - 16) / 84) < 1.9495 / math.sqrt(len(replaced))


def test_the_default_randomness_is_the_operating_systems():
    assert isinstance(client.distortion._SYSTEM_RANDOM, random.SystemRandom)
    # Not seedable: two draws of a binary randomised response differ in some of 200 tries.
    draws = {distort_answer(SEX, "F") for _ in range(200)}
    assert draws == {"F", "M"}


def test_sent_as_they_are_for_none_and_manual_negative():
    manual = {**SATISFACTION, "mechanism": {"name": "negative_manual"}, "channel": None}
    assert distort_answer(manual, "3") == "3"
    assert distort_answer({**AGE, "mechanism": {"name": "none"}}, 41.5) == 41.5


def test_one_residents_answers_are_plain_json_values():
    sent = distort_answers(SCHEME, {"sex": "F", "age": 43})
    assert set(sent) == {"sex", "age"}
    assert sent["sex"] in ("F", "M") and isinstance(sent["age"], float)
    assert 33 <= sent["age"] <= 53


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"sex": "X"}, r"question 'sex': unknown category 'X'"),
        ({"sex": 1}, r"question 'sex': the answer must be a category label"),
        ({"age": float("nan")}, r"question 'age': the answer must be a finite number"),
        ({"age": True}, r"question 'age': the answer must be a finite number"),
        ({"age": 120}, r"question 'age': answer 120.0 is outside the range \[16.0, 100.0\]"),
        ({"shoe_size": "42"}, r"unknown question 'shoe_size' for survey 3"),
    ],
)
def test_invalid_answers_are_refused_naming_the_question(answers, message):
    with pytest.raises(ValueError, match=message):
        distort_answers(SCHEME, answers)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mechanism": {"name": "coin_flip"}}, r"unknown mechanism 'coin_flip'"),
        ({"channel": None}, r"must carry a 2x2 channel"),
        ({"channel": [[0.7, 0.2], [0.3, 0.7]]}, r"a channel row sums to 0.9, not 1"),
        ({"channel": [[1.2, -0.2], [0.3, 0.7]]}, r"non-negative probabilities"),
    ],
)
def test_a_broken_discrete_scheme_entry_is_refused(change, message):
    with pytest.raises(ValueError, match=message):
        distort_answer({**SEX, **change}, "F")


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ({"name": "additive_cauchy", "scale": 1}, r"unknown mechanism 'additive_cauchy'"),
        (
            {"name": "additive_gaussian", "sigma": -1},
            r"mechanism parameter 'sigma' must be a positive number",
        ),
        (
            {"name": "additive_uniform"},
            r"mechanism parameter 'half_width' must be a positive number, got None",
        ),
        ({"name": "retention_replacement", "retain": 1.5}, r"'retain' must be in \(0, 1\]"),
    ],
)
def test_a_broken_continuous_scheme_entry_is_refused(mechanism, message):
    with pytest.raises(ValueError, match=f"question 'age': {message}"):
        distort_answer({**AGE, "mechanism": mechanism}, 40)


def test_localise_question_shows_labels_in_the_residents_language_with_wire_values():
    shown = localise_question(SEX, ["de-AT", "en"])
    assert shown == {
        "language": "de",
        "text": "Geschlecht",
        "options": [{"value": "F", "label": "weiblich"}, {"value": "M", "label": "männlich"}],
    }
    assert localise_question(SEX, "pl")["options"][0] == {"value": "F", "label": "F"}
    assert (
        distort_answer({**SEX, "mechanism": {"name": "none"}}, shown["options"][1]["value"]) == "M"
    )


def test_the_package_imports_neither_numpy_nor_scipy():
    import subprocess

    code = (
        "import sys, consultation_client; "
        "print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


# --- additive_staircase (Geng & Viswanath, IEEE Trans. Inf. Theory 62(2), 2016) -----------
# The closed forms are written from the published density, not from the sampler: with
# gamma = 1 / (1 + e^(eps/2)) and b = e^-eps the density is a b^k on |z| in
# [k, k + gamma) delta and a b^(k+1) on [k + gamma, k + 1) delta,
# a = (1 - b) / (2 delta (gamma + (1 - gamma) b)).

N_STAIRCASE = 100_000
KS_STAIRCASE = 1.9495 / math.sqrt(N_STAIRCASE)
STAIRCASE_CASES = [(1.0, 5.0, 38.0), (3.0, 0.5, 12.25)]
HOURS = {"key": "hours", "type": "continuous", "range": [0, 80]}


def staircase_constants(epsilon, delta):
    gamma = 1 / (1 + math.exp(epsilon / 2))
    b = math.exp(-epsilon)
    return gamma, b, (1 - b) / (2 * delta * (gamma + (1 - gamma) * b))


def staircase_density(z, epsilon, delta):
    gamma, b, a = staircase_constants(epsilon, delta)
    t = abs(z) / delta
    k = math.floor(t)
    return a * b**k if t - k < gamma else a * b ** (k + 1)


def staircase_cdf(x, epsilon, delta):
    gamma, b, a = staircase_constants(epsilon, delta)
    t = abs(x) / delta
    k = math.floor(t)
    r = t - k
    # Mass of [0, |x|]: the whole stairs 0..k-1 on one side, then the part of stair k.
    whole = a * delta * (gamma + (1 - gamma) * b) * (1 - b**k) / (1 - b)
    part = a * b**k * delta * (r if r <= gamma else gamma + b * (r - gamma))
    return 0.5 + whole + part if x >= 0 else 0.5 - whole - part


def staircase_inner_mass(epsilon):
    """Pr(|noise| < gamma delta) as the contract states it."""
    gamma = 1 / (1 + math.exp(epsilon / 2))
    b = math.exp(-epsilon)
    return (1 - b) * gamma / (gamma + (1 - gamma) * b)


def staircase_noise(epsilon, delta, value, seed, name="additive_staircase"):
    mechanism = (
        {"name": name, "epsilon": epsilon, "sensitivity": delta}
        if name == "additive_staircase"
        else {"name": name, "scale": delta / epsilon}  # the Laplace mechanism at the same eps
    )
    question = {**HOURS, "mechanism": mechanism}
    rng = random.Random(seed)
    return [distort_answer(question, value, rng=rng) - value for _ in range(N_STAIRCASE)]


@pytest.mark.parametrize(("epsilon", "delta", "value"), STAIRCASE_CASES)
def test_the_staircase_closed_forms_agree_with_the_published_density(epsilon, delta, value):
    steps = 4000  # midpoint rule on a piecewise-constant density, steps of delta / 4000
    h = delta / steps
    integral = 0.0
    for i in range(6 * steps):
        integral += staircase_density((i + 0.5) * h, epsilon, delta) * h
        if (i + 1) % 700 == 0:
            x = (i + 1) * h
            assert staircase_cdf(x, epsilon, delta) == pytest.approx(0.5 + integral, abs=1e-3)
            assert staircase_cdf(-x, epsilon, delta) == pytest.approx(0.5 - integral, abs=1e-3)
    gamma = staircase_constants(epsilon, delta)[0]
    inner = staircase_cdf(gamma * delta, epsilon, delta) - staircase_cdf(
        -gamma * delta, epsilon, delta
    )
    assert inner == pytest.approx(staircase_inner_mass(epsilon), abs=1e-12)
    assert staircase_cdf(200 * delta / epsilon, epsilon, delta) == pytest.approx(1, abs=1e-12)


@pytest.mark.parametrize(("epsilon", "delta", "value"), STAIRCASE_CASES)
def test_staircase_noise_has_the_published_distribution_and_laplace_is_rejected(
    epsilon, delta, value
):
    def cdf(x):
        return staircase_cdf(x, epsilon, delta)

    d = ks_statistic(staircase_noise(epsilon, delta, value, seed=4), cdf)
    assert d < KS_STAIRCASE, f"KS D={d:.5f}"
    # The same tolerance rejects Laplace noise of scale delta / eps.
    d_laplace = ks_statistic(staircase_noise(epsilon, delta, value, 4, "additive_laplace"), cdf)
    assert d_laplace >= KS_STAIRCASE, f"Laplace passes: D={d_laplace:.5f}"


@pytest.mark.parametrize(("epsilon", "delta", "value"), STAIRCASE_CASES)
def test_staircase_noise_has_its_closed_form_mass_within_gamma_delta(epsilon, delta, value):
    p = staircase_inner_mass(epsilon)
    limit = staircase_constants(epsilon, delta)[0] * delta
    bound = 3.3 * math.sqrt(N_STAIRCASE * p * (1 - p))  # binomial, alpha ~ 0.001
    inner = sum(abs(z) < limit for z in staircase_noise(epsilon, delta, value, seed=5))
    assert abs(inner - N_STAIRCASE * p) < bound, (inner, N_STAIRCASE * p)
    laplace = staircase_noise(epsilon, delta, value, 5, "additive_laplace")
    assert abs(sum(abs(z) < limit for z in laplace) - N_STAIRCASE * p) >= bound


@pytest.mark.parametrize(("epsilon", "delta", "value"), STAIRCASE_CASES)
def test_staircase_noise_is_symmetric(epsilon, delta, value):
    noise = staircase_noise(epsilon, delta, value, seed=6)
    positive = sorted(z for z in noise if z > 0)
    negative = sorted(-z for z in noise if z < 0)
    assert abs(len(positive) - N_STAIRCASE / 2) < 3.3 * math.sqrt(N_STAIRCASE / 4)
    # Two-sample KS between the positive side and the mirrored negative side (alpha 0.001).
    i = j = 0
    d = 0.0
    while i < len(positive) and j < len(negative):
        x = min(positive[i], negative[j])
        while i < len(positive) and positive[i] <= x:
            i += 1
        while j < len(negative) and negative[j] <= x:
            j += 1
        d = max(d, abs(i / len(positive) - j / len(negative)))
    n, m = len(positive), len(negative)
    assert d < 1.9495 * math.sqrt((n + m) / (n * m))


def test_staircase_draws_from_the_operating_systems_generator(monkeypatch):
    class Counting(random.SystemRandom):
        calls = 0

        def random(self):
            Counting.calls += 1
            return super().random()

    monkeypatch.setattr(client.distortion, "_SYSTEM_RANDOM", Counting())
    mechanism = {"name": "additive_staircase", "epsilon": 1, "sensitivity": 5}
    question = {**HOURS, "mechanism": mechanism}
    sent = {distort_answer(question, 40) for _ in range(50)}
    assert Counting.calls >= 4 * 50
    assert len(sent) == 50


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ({"sensitivity": 1}, r"mechanism parameter 'epsilon' must be a positive number, got None"),
        ({"epsilon": 1}, r"mechanism parameter 'sensitivity' must be a positive number, got None"),
        ({"epsilon": 0, "sensitivity": 1}, r"'epsilon' must be a positive number, got 0"),
        ({"epsilon": -1, "sensitivity": 1}, r"'epsilon' must be a positive number"),
        ({"epsilon": "1", "sensitivity": 1}, r"'epsilon' must be a positive number, got '1'"),
        ({"epsilon": True, "sensitivity": 1}, r"'epsilon' must be a positive number, got True"),
        ({"epsilon": math.nan, "sensitivity": 1}, r"'epsilon' must be a positive number"),
        ({"epsilon": math.inf, "sensitivity": 1}, r"'epsilon' must be finite"),
        ({"epsilon": 1, "sensitivity": 0}, r"'sensitivity' must be a positive number, got 0"),
        ({"epsilon": 1, "sensitivity": -2.5}, r"'sensitivity' must be a positive number"),
        ({"epsilon": 1, "sensitivity": None}, r"'sensitivity' must be a positive number"),
        ({"epsilon": 1, "sensitivity": math.inf}, r"'sensitivity' must be finite"),
        # A subnormal eps makes the stair count overflow: refused, not a crash.
        ({"epsilon": 1e-310, "sensitivity": 1}, r"give noise too large to send"),
    ],
)
def test_additive_staircase_refuses_bad_parameters_naming_them(mechanism, message):
    question = {**HOURS, "mechanism": {"name": "additive_staircase", **mechanism}}
    with pytest.raises(ValueError, match=f"question 'hours': .*{message}"):
        distort_answer(question, 40, rng=random.Random(0))


def test_kept_reports_are_sent_again_and_a_question_asked_again_reuses_the_earlier_one():
    """Issue 28: with a participant and a memo, drawn reports are kept and re-sent
    (permanent randomisation), a ``reuse`` question re-sends the earlier question's report,
    and no true answer is kept."""
    rng = random.Random(28)
    memo: dict[str, object] = {}
    tenure = {"key": "tenure", "type": "binary", "categories": ["own", "rent"],
              "mechanism": {"name": "none"}}  # fmt: skip
    first_scheme = {"survey": 3, "questions": [SEX, AGE, tenure]}
    first = distort_answers(
        first_scheme,
        {"sex": "F", "age": 40, "tenure": "rent"},
        rng=rng,
        participant="p-1",
        memo=memo,
    )
    assert set(memo) == {"3:p-1:sex", "3:p-1:age"}  # the exact answer is not kept
    again_scheme = {
        "survey": 9,
        "questions": [
            {**SEX, "key": "sex_again", "reuse": {"survey": 3, "question": "sex"}},
            {**AGE, "key": "age_again", "reuse": {"survey": 3, "question": "age"}},
        ],
    }
    for _ in range(30):
        sent = distort_answers(
            again_scheme, {"sex_again": "M", "age_again": 70}, rng=rng, participant="p-1", memo=memo
        )
        assert sent == {"sex_again": first["sex"], "age_again": first["age"]}
        assert distort_answers(
            first_scheme, {"sex": "M"}, rng=rng, participant="p-1", memo=memo
        ) == {"sex": first["sex"]}
    assert set(memo) == {"3:p-1:sex", "3:p-1:age"}
    # Another participant draws afresh, kept under the earlier question.
    other = distort_answers(again_scheme, {"sex_again": "F"}, rng=rng, participant="p-2", memo=memo)
    assert memo["3:p-2:sex"] == other["sex_again"]
    # A stale entry the scheme could not have produced is ignored.
    memo["3:p-3:sex"] = "X"
    assert distort_answers(first_scheme, {"sex": "F"}, rng=rng, participant="p-3", memo=memo)[
        "sex"
    ] in ("F", "M")
    assert memo["3:p-3:sex"] in ("F", "M")
