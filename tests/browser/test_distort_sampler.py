"""Browser test (a): distort.js samples the published channels and noise in real Chromium.

The sampler runs 100,000 times inside the page for each mechanism; the counts must pass
a chi-square test (p > 0.001) against the published channel row, and continuous noise a
Kolmogorov-Smirnov test. crypto.getRandomValues cannot be seeded, so each test fails by
chance with probability 0.001.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privacy.mechanisms import negative_gaussian, negative_uniform, randomised_response

pytestmark = pytest.mark.browser

N = 100_000
ALPHA = 0.001

COUNT_IN_PAGE = """([question, value, n]) => {
  const counts = Object.fromEntries(question.categories.map((c) => [c, 0]));
  for (let s = 0; s < n; s++) counts[window.distort.distortAnswer(question, value)] += 1;
  return counts;
}"""

NOISE_IN_PAGE = """([question, value, n]) => {
  const noise = new Array(n);
  for (let s = 0; s < n; s++) noise[s] = window.distort.distortAnswer(question, value) - value;
  return noise;
}"""


def _discrete(key, categories, mechanism, channel):
    return {
        "key": key,
        "type": "ordinal",
        "categories": categories,
        "mechanism": mechanism,
        "channel": np.asarray(channel).tolist(),
    }


DISCRETE_CASES = {
    "randomised_response": (
        _discrete(
            "district",
            ["N", "S", "E", "W", "C"],
            {"name": "randomised_response", "retain": 0.6},
            randomised_response(5, 0.6),
        ),
        "E",
    ),
    "negative_uniform": (
        _discrete(
            "satisfaction",
            ["1", "2", "3", "4", "5"],
            {"name": "negative_uniform"},
            negative_uniform(5),
        ),
        "3",
    ),
    "negative_gaussian": (
        _discrete(
            "site",
            list("ABCDEFG"),
            {"name": "negative_gaussian", "sigma": 1.5},
            negative_gaussian(7, 1.5),
        ),
        "B",  # near the edge, so the row is asymmetric
    ),
}


@pytest.mark.parametrize("case", list(DISCRETE_CASES))
def test_discrete_sampler_follows_the_published_channel_row(sampler_page, case):
    question, value = DISCRETE_CASES[case]
    counts = sampler_page.evaluate(COUNT_IN_PAGE, [question, value, N])
    observed = np.array([counts[c] for c in question["categories"]])
    row = np.asarray(question["channel"])[question["categories"].index(value)]
    assert observed.sum() == N
    assert observed[row == 0].sum() == 0, "a category of probability 0 was reported"
    p_value = stats.chisquare(observed[row > 0], N * row[row > 0]).pvalue
    assert p_value > ALPHA, f"{case}: chi-square p={p_value:.2g}, observed {observed}"


CONTINUOUS_CASES = {
    "additive_uniform": ({"name": "additive_uniform", "half_width": 10}, stats.uniform(-10, 20)),
    "additive_gaussian": ({"name": "additive_gaussian", "sigma": 800}, stats.norm(0, 800)),
    "additive_laplace": ({"name": "additive_laplace", "scale": 4}, stats.laplace(0, 4)),
}


@pytest.mark.parametrize("case", list(CONTINUOUS_CASES))
def test_continuous_noise_has_the_published_distribution(sampler_page, case):
    mechanism, noise = CONTINUOUS_CASES[case]
    question = {"key": "x", "type": "continuous", "range": [0, 20000], "mechanism": mechanism}
    samples = np.asarray(sampler_page.evaluate(NOISE_IN_PAGE, [question, 5000, N]))
    assert samples.shape == (N,)
    p_value = stats.kstest(samples, noise.cdf).pvalue
    assert p_value > ALPHA, f"{case}: KS p={p_value:.2g}"


def test_answers_are_memoised_in_local_storage(sampler_page):
    question, _ = DISCRETE_CASES["negative_gaussian"]
    scheme = {"survey": 9, "status": "open", "questions": [question]}
    sent, stored = sampler_page.evaluate(
        """(scheme) => {
          const first = [];
          const options = { participant: "p-1" };
          for (let s = 0; s < 20; s++) {
            first.push(window.distort.distortAnswers(scheme, { site: "D" }, options).site);
          }
          return [first, localStorage.getItem("privacy-distort:v1:9:p-1:site")];
        }""",
        scheme,
    )
    assert len(set(sent)) == 1 and sent[0] != "D"
    assert stored == f'"{sent[0]}"'
