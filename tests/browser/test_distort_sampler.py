"""Browser test (a): distort.js samples the published channels and noise in real Chromium.

The sampler runs 100,000 times inside the page for each mechanism; the counts must pass
a chi-square test (p > 0.001) against the published channel row, and continuous noise a
Kolmogorov-Smirnov test. The statistical tests run with ``crypto.getRandomValues``
replaced in the page by a seeded generator (tests/js/seeded_crypto.mjs), so each gives the
same verdict on every run. One unseeded smoke test at alpha = 1e-6 checks that the
browser's real ``crypto.getRandomValues`` drives the sampler.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privacy.mechanisms import negative_gaussian, negative_uniform, randomised_response

pytestmark = pytest.mark.browser

N = 100_000
ALPHA = 0.001
SMOKE_ALPHA = 1e-6

COUNT_IN_PAGE = """([question, value, n, seed]) => {
  if (seed === null) window.seeded.useRealCrypto(); else window.seeded.useSeed(seed);
  const counts = Object.fromEntries(question.categories.map((c) => [c, 0]));
  for (let s = 0; s < n; s++) counts[window.distort.distortAnswer(question, value)] += 1;
  return counts;
}"""

NOISE_IN_PAGE = """([question, value, n, seed]) => {
  if (seed === null) window.seeded.useRealCrypto(); else window.seeded.useSeed(seed);
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
    seed = 200 + list(DISCRETE_CASES).index(case)
    counts = sampler_page.evaluate(COUNT_IN_PAGE, [question, value, N, seed])
    observed = np.array([counts[c] for c in question["categories"]])
    row = np.asarray(question["channel"])[question["categories"].index(value)]
    assert observed.sum() == N
    assert observed[row == 0].sum() == 0, "a category of probability 0 was reported"
    p_value = stats.chisquare(observed[row > 0], N * row[row > 0]).pvalue
    assert p_value > ALPHA, f"{case}: chi-square p={p_value:.2g}, observed {observed}"


class Staircase:
    """Closed-form CDF of the staircase noise (Geng & Viswanath, "The optimal noise-adding
    mechanism in differential privacy", IEEE Trans. Inf. Theory 62(2), 2016), written from
    its density: with gamma = 1 / (1 + e^(eps/2)) and b = e^-eps, the density is a*b^k on
    |z| in [k, k + gamma)*delta and a*b^(k+1) on [k + gamma, k + 1)*delta,
    a = (1 - b) / (2 delta (gamma + (1 - gamma) b))."""

    def __init__(self, epsilon: float, sensitivity: float) -> None:
        self.delta = sensitivity
        self.gamma = 1 / (1 + np.exp(epsilon / 2))
        self.b = np.exp(-epsilon)
        self.a = (1 - self.b) / (2 * sensitivity * (self.gamma + (1 - self.gamma) * self.b))

    def cdf(self, x):
        x = np.asarray(x, dtype=float)
        t = np.abs(x) / self.delta
        k = np.floor(t)
        r = t - k
        g, b = self.gamma, self.b
        # Mass of [0, |x|]: whole stairs 0..k-1, then the part of stair k.
        whole = self.a * self.delta * (g + (1 - g) * b) * (1 - b**k) / (1 - b)
        part = self.a * b**k * self.delta * np.where(r <= g, r, g + b * (r - g))
        side = whole + part
        return np.where(x >= 0, 0.5 + side, 0.5 - side)


STAIRCASE = {"name": "additive_staircase", "epsilon": 1.0, "sensitivity": 5.0}

CONTINUOUS_CASES = {
    "additive_uniform": ({"name": "additive_uniform", "half_width": 10}, stats.uniform(-10, 20)),
    "additive_gaussian": ({"name": "additive_gaussian", "sigma": 800}, stats.norm(0, 800)),
    "additive_laplace": ({"name": "additive_laplace", "scale": 4}, stats.laplace(0, 4)),
    "additive_staircase": (STAIRCASE, Staircase(1.0, 5.0)),
}


@pytest.mark.parametrize("case", list(CONTINUOUS_CASES))
def test_continuous_noise_has_the_published_distribution(sampler_page, case):
    mechanism, noise = CONTINUOUS_CASES[case]
    question = {"key": "x", "type": "continuous", "range": [0, 20000], "mechanism": mechanism}
    seed = 300 + list(CONTINUOUS_CASES).index(case)
    samples = np.asarray(sampler_page.evaluate(NOISE_IN_PAGE, [question, 5000, N, seed]))
    assert samples.shape == (N,)
    p_value = stats.kstest(samples, noise.cdf).pvalue
    assert p_value > ALPHA, f"{case}: KS p={p_value:.2g}"


def test_staircase_noise_mass_and_symmetry_and_the_ks_test_rejects_laplace(sampler_page):
    """additive_staircase in the page: the mass within +-gamma*delta is
    (1-b)gamma / (gamma + (1-gamma)b), the two sides mirror each other, and the KS test
    above rejects the Laplace mechanism of the same eps (scale delta/eps)."""
    staircase = Staircase(STAIRCASE["epsilon"], STAIRCASE["sensitivity"])
    question = {"key": "x", "type": "continuous", "range": [0, 20000], "mechanism": STAIRCASE}
    noise = np.asarray(sampler_page.evaluate(NOISE_IN_PAGE, [question, 5000, N, 310]))
    g, b = staircase.gamma, staircase.b
    inner = int((np.abs(noise) < g * staircase.delta).sum())
    p = (1 - b) * g / (g + (1 - g) * b)
    assert stats.binomtest(inner, N, p).pvalue > ALPHA, f"{inner} of {N} within +-gamma*delta"
    assert stats.binomtest(int((noise > 0).sum()), N, 0.5).pvalue > ALPHA
    assert stats.ks_2samp(noise[noise > 0], -noise[noise < 0]).pvalue > ALPHA
    laplace = {**question, "mechanism": {"name": "additive_laplace", "scale": 5.0}}
    other = np.asarray(sampler_page.evaluate(NOISE_IN_PAGE, [laplace, 5000, N, 311]))
    assert stats.kstest(other, staircase.cdf).pvalue < ALPHA


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


def test_unseeded_smoke_the_browser_crypto_drives_the_sampler(sampler_page):
    """The one unseeded test: real ``crypto.getRandomValues``, alpha = 1e-6.

    A pass-through wrapper counts the calls to the browser's generator; randomised response
    must follow its row (chance failure about once in a million runs) and two runs of 64
    uniforms must differ.
    """
    question, value = DISCRETE_CASES["randomised_response"]
    calls, counts, first, second = sampler_page.evaluate(
        """([question, value, n]) => {
          window.seeded.useRealCrypto();
          const real = crypto.getRandomValues;
          let calls = 0;
          Object.defineProperty(crypto, "getRandomValues", {
            value: (array) => { calls += 1; return real.call(crypto, array); },
            configurable: true, writable: true,
          });
          const counts = Object.fromEntries(question.categories.map((c) => [c, 0]));
          for (let s = 0; s < n; s++) counts[window.distort.distortAnswer(question, value)] += 1;
          const first = Array.from({ length: 64 }, () => window.distort.uniform());
          const second = Array.from({ length: 64 }, () => window.distort.uniform());
          window.seeded.useRealCrypto();
          return [calls, counts, first, second];
        }""",
        [question, value, N],
    )
    assert calls >= N, f"only {calls} calls to crypto.getRandomValues for {N} draws"
    observed = np.array([counts[c] for c in question["categories"]])
    row = np.asarray(question["channel"])[question["categories"].index(value)]
    p_value = stats.chisquare(observed, N * row).pvalue
    assert p_value > SMOKE_ALPHA, f"chi-square p={p_value:.2g}, observed {observed}"
    assert first != second


def test_the_seeded_generator_replaces_crypto_in_the_page(sampler_page):
    """The statistical tests above are reproducible: one seed, one sequence of draws."""
    question, value = DISCRETE_CASES["negative_gaussian"]
    first = sampler_page.evaluate(COUNT_IN_PAGE, [question, value, 500, 42])
    again = sampler_page.evaluate(COUNT_IN_PAGE, [question, value, 500, 42])
    other = sampler_page.evaluate(COUNT_IN_PAGE, [question, value, 500, 43])
    assert first == again
    assert first != other
    assert sampler_page.evaluate(
        "() => { window.seeded.useRealCrypto(); return crypto.getRandomValues === "
        "Object.getPrototypeOf(crypto).getRandomValues; }"
    )
