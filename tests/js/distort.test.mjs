// Fast statistical and behavioural tests of clients/js/src/distort.js without a browser:
//   node --test tests/js/
//
// Every statistical test runs under a seeded stand-in for
// crypto.getRandomValues (seeded_crypto.mjs), so its outcome is the same on
// every run: a seed that passes passes for good, and a broken sampler fails
// for every seed.  One unseeded smoke test at alpha = 1e-6 checks that the
// real crypto.getRandomValues is what the library calls.
//
// The library's location is set in one place: DISTORT_JS below (or the
// DISTORT_JS environment variable, a path relative to the repository root).

import { test } from "node:test";
import assert from "node:assert/strict";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { useRealCrypto, withSeed } from "./seeded_crypto.mjs";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DISTORT_JS = process.env.DISTORT_JS ?? "clients/js/src/distort.js";
const { distortAnswer, distortAnswers, uniform } = await import(pathToFileURL(resolve(REPO, DISTORT_JS)).href);

const N = 100_000;

// Math.random is not a cryptographic generator: any use of it by the library fails here.
Math.random = () => {
  throw new Error("Math.random must not be used by distort.js");
};

// Upper 0.001 critical values of the chi-square distribution, df = 1..10
// (NIST/SEMATECH e-Handbook of Statistical Methods, table 1.3.6.7.4).
const CHI2_CRITICAL_0_001 = [NaN, 10.828, 13.816, 16.266, 18.467, 20.515, 22.458, 24.322, 26.124, 27.877, 29.588];

// Kolmogorov–Smirnov large-sample critical value at alpha = 0.001:
// sqrt(-ln(alpha / 2) / 2) / sqrt(n) = 1.9495 / sqrt(n).
const KS_CRITICAL_0_001 = 1.9495 / Math.sqrt(N);

// Upper 1e-6 critical values of the chi-square distribution, df = 1..4
// (scipy.stats.chi2.isf(1e-6, df)), for the unseeded smoke test.
const CHI2_CRITICAL_1E_6 = [NaN, 23.928, 27.631, 30.665, 33.377];

// A seeded statistical test: fn runs with crypto.getRandomValues replaced by a
// generator seeded with `seed`; the real generator is restored afterwards.
function seededTest(name, seed, fn) {
  test(`${name} (seed ${seed})`, () => withSeed(seed, fn));
}

function chiSquare(observed, probabilities, n) {
  let statistic = 0;
  let cells = 0;
  probabilities.forEach((p, j) => {
    if (p === 0) {
      assert.equal(observed[j] ?? 0, 0, `category ${j} has probability 0 but was reported`);
      return;
    }
    const expected = n * p;
    statistic += ((observed[j] ?? 0) - expected) ** 2 / expected;
    cells += 1;
  });
  return { statistic, df: cells - 1 };
}

function assertFollowsRow(question, trueValue, row) {
  const index = new Map(question.categories.map((c, j) => [c, j]));
  const observed = new Array(row.length).fill(0);
  for (let s = 0; s < N; s++) observed[index.get(distortAnswer(question, trueValue))] += 1;
  const { statistic, df } = chiSquare(observed, row, N);
  assert.ok(statistic < CHI2_CRITICAL_0_001[df], `chi-square ${statistic.toFixed(2)} >= ${CHI2_CRITICAL_0_001[df]} (df ${df}); observed ${observed}`);
}

// Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7, far below KS resolution).
function erf(x) {
  const t = 1 / (1 + 0.3275911 * Math.abs(x));
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return x >= 0 ? y : -y;
}

function ksStatistic(samples, cdf) {
  const sorted = Float64Array.from(samples).sort();
  let d = 0;
  sorted.forEach((x, i) => {
    const f = cdf(x);
    d = Math.max(d, (i + 1) / sorted.length - f, f - i / sorted.length);
  });
  return d;
}

function noiseSamples(question, trueValue) {
  return Array.from({ length: N }, () => distortAnswer(question, trueValue) - trueValue);
}

function negativeGaussianChannel(k, sigma) {
  return Array.from({ length: k }, (_, i) => {
    const w = Array.from({ length: k }, (_, j) => (j === i ? 0 : Math.exp(-((j - i) ** 2) / (2 * sigma ** 2))));
    const total = w.reduce((a, b) => a + b, 0);
    return w.map((x) => x / total);
  });
}

const sex = { key: "sex", type: "binary", categories: ["F", "M"], mechanism: { name: "randomised_response", retain: 0.7 }, channel: [[0.7, 0.3], [0.3, 0.7]] };
const satisfaction = {
  key: "satisfaction", type: "ordinal", categories: ["1", "2", "3", "4", "5"], mechanism: { name: "negative_uniform" },
  channel: Array.from({ length: 5 }, (_, i) => Array.from({ length: 5 }, (_, j) => (i === j ? 0 : 0.25))),
};
const site = { key: "site", type: "ordinal", categories: ["A", "B", "C", "D", "E", "F", "G"], mechanism: { name: "negative_gaussian", sigma: 1.5 }, channel: negativeGaussianChannel(7, 1.5) };
const skips = { key: "skips_class", type: "ordinal", categories: ["never", "rarely", "often", "always"], mechanism: { name: "negative_manual" }, instruction: "Choose one answer that is NOT true for you." };
const age = { key: "age", type: "continuous", range: [16, 100], mechanism: { name: "additive_uniform", half_width: 10 } };
const income = { key: "income", type: "continuous", range: [0, 20000], mechanism: { name: "additive_gaussian", sigma: 800 } };
const hours = { key: "hours", type: "continuous", range: [0, 80], mechanism: { name: "additive_laplace", scale: 4 } };
const rooms = { key: "rooms", type: "continuous", range: [1, 9], mechanism: { name: "retention_replacement", retain: 0.6 } };
const scheme = { survey: 3, status: "open", questions: [sex, satisfaction, site, skips, age, income, hours, rooms] };

seededTest("uniform() lies in [0, 1) and has mean 1/2", 101, () => {
  let sum = 0;
  for (let s = 0; s < N; s++) {
    const u = uniform();
    assert.ok(u >= 0 && u < 1);
    sum += u;
  }
  // standard error of the mean is sqrt(1/12/N) ~ 0.0009
  assert.ok(Math.abs(sum / N - 0.5) < 0.0033);
});

seededTest("randomised response follows the published channel row", 102, () => {
  assertFollowsRow(sex, "F", sex.channel[0]);
  assertFollowsRow(sex, "M", sex.channel[1]);
});

seededTest("uniform negative survey never reports the truth and is uniform elsewhere", 103, () => {
  assertFollowsRow(satisfaction, "3", satisfaction.channel[2]);
});

seededTest("Gaussian negative survey follows its (asymmetric) row", 104, () => {
  assertFollowsRow(site, "B", site.channel[1]);
});

seededTest("continuous noise has the published distribution (KS)", 105, () => {
  const cases = [
    [age, 40, (x) => Math.min(1, Math.max(0, (x + 10) / 20))],
    [income, 2400, (x) => 0.5 * (1 + erf(x / (800 * Math.SQRT2)))],
    [hours, 38, (x) => (x < 0 ? 0.5 * Math.exp(x / 4) : 1 - 0.5 * Math.exp(-x / 4))],
  ];
  for (const [question, value, cdf] of cases) {
    const d = ksStatistic(noiseSamples(question, value), cdf);
    assert.ok(d < KS_CRITICAL_0_001, `${question.key}: KS D=${d.toFixed(5)} >= ${KS_CRITICAL_0_001.toFixed(5)}`);
  }
});

// --- additive_staircase (Geng & Viswanath, IEEE Trans. Inf. Theory 62(2), 2016) ---
// The closed forms below are written from the published density, not from the
// sampler: with gamma = 1 / (1 + e^(eps/2)) and b = e^(-eps) the density is
// a*b^k on |z| in [k, k + gamma)*delta and a*b^(k+1) on [k + gamma, k + 1)*delta,
// a = (1 - b) / (2 delta (gamma + (1 - gamma) b)).

function staircaseConstants(epsilon, delta) {
  const gamma = 1 / (1 + Math.exp(epsilon / 2));
  const b = Math.exp(-epsilon);
  return { gamma, b, a: (1 - b) / (2 * delta * (gamma + (1 - gamma) * b)) };
}

function staircaseDensity(epsilon, delta) {
  const { gamma, b, a } = staircaseConstants(epsilon, delta);
  return (z) => {
    const t = Math.abs(z) / delta;
    const k = Math.floor(t);
    return t - k < gamma ? a * b ** k : a * b ** (k + 1);
  };
}

// Pr(noise <= x): integrate the density stair by stair.  Whole stairs 0..k-1
// on one side hold a*delta*(gamma + (1 - gamma) b) * (b^0 + ... + b^(k-1)).
function staircaseCdf(epsilon, delta) {
  const { gamma, b, a } = staircaseConstants(epsilon, delta);
  const side = (x) => {
    // mass of [0, x] for x >= 0
    const t = x / delta;
    const k = Math.floor(t);
    const r = t - k;
    const whole = a * delta * (gamma + (1 - gamma) * b) * (1 - b ** k) / (1 - b);
    const part = r <= gamma ? a * b ** k * r * delta : a * b ** k * (gamma * delta + b * (r - gamma) * delta);
    return whole + part;
  };
  return (x) => (x >= 0 ? 0.5 + side(x) : 0.5 - side(-x));
}

// The mass within +-gamma*delta, as the contract states it.
function staircaseInnerMass(epsilon) {
  const gamma = 1 / (1 + Math.exp(epsilon / 2));
  const b = Math.exp(-epsilon);
  return ((1 - b) * gamma) / (gamma + (1 - gamma) * b);
}

const STAIRCASE_CASES = [
  { epsilon: 1, sensitivity: 5, value: 38 },
  { epsilon: 3, sensitivity: 0.5, value: 12.25 },
];

function staircaseQuestion({ epsilon, sensitivity }) {
  return { key: "hours", type: "continuous", range: [0, 80], mechanism: { name: "additive_staircase", epsilon, sensitivity } };
}

function laplaceTwin({ epsilon, sensitivity }) {
  // The Laplace mechanism at the same eps and sensitivity: scale delta / eps.
  return { key: "hours", type: "continuous", range: [0, 80], mechanism: { name: "additive_laplace", scale: sensitivity / epsilon } };
}

test("the staircase closed forms used below agree with the published density", () => {
  for (const { epsilon, sensitivity } of STAIRCASE_CASES) {
    const density = staircaseDensity(epsilon, sensitivity);
    const cdf = staircaseCdf(epsilon, sensitivity);
    // Midpoint rule from 0 to x (the density is piecewise constant; steps of delta/4000).
    const h = sensitivity / 4000;
    let integral = 0;
    for (let i = 0; i < 4000 * 6; i++) {
      integral += density((i + 0.5) * h) * h;
      const x = (i + 1) * h;
      if ((i + 1) % 700 === 0) {
        assert.ok(Math.abs(cdf(x) - (0.5 + integral)) < 1e-3, `eps ${epsilon}: F(${x}) = ${cdf(x)}, integral ${0.5 + integral}`);
        assert.ok(Math.abs(cdf(-x) - (0.5 - integral)) < 1e-3);
      }
    }
    const { gamma } = staircaseConstants(epsilon, sensitivity);
    const inner = cdf(gamma * sensitivity) - cdf(-gamma * sensitivity);
    assert.ok(Math.abs(inner - staircaseInnerMass(epsilon)) < 1e-12, `inner mass ${inner} vs ${staircaseInnerMass(epsilon)}`);
    assert.ok(Math.abs(cdf(200 * sensitivity / epsilon) - 1) < 1e-12 && Math.abs(cdf(-200 * sensitivity / epsilon)) < 1e-12);
  }
});

seededTest("staircase noise has the published distribution (KS); the Laplace mechanism at the same eps does not", 110, () => {
  for (const stair of STAIRCASE_CASES) {
    const cdf = staircaseCdf(stair.epsilon, stair.sensitivity);
    const d = ksStatistic(noiseSamples(staircaseQuestion(stair), stair.value), cdf);
    assert.ok(d < KS_CRITICAL_0_001, `eps ${stair.epsilon}: KS D=${d.toFixed(5)} >= ${KS_CRITICAL_0_001.toFixed(5)}`);
    // The same test rejects Laplace noise of scale delta/eps: the tolerance is tight enough.
    const dLaplace = ksStatistic(noiseSamples(laplaceTwin(stair), stair.value), cdf);
    assert.ok(dLaplace >= KS_CRITICAL_0_001, `eps ${stair.epsilon}: Laplace passes the staircase KS test (D=${dLaplace.toFixed(5)})`);
  }
});

seededTest("staircase noise puts (1-b)gamma/(gamma+(1-gamma)b) of its mass within +-gamma*delta", 111, () => {
  for (const stair of STAIRCASE_CASES) {
    const p = staircaseInnerMass(stair.epsilon);
    const limit = staircaseConstants(stair.epsilon, stair.sensitivity).gamma * stair.sensitivity;
    const bound = 3.3 * Math.sqrt(N * p * (1 - p)); // binomial, alpha ~ 0.001
    const inner = (question) => noiseSamples(question, stair.value).filter((z) => Math.abs(z) < limit).length;
    const count = inner(staircaseQuestion(stair));
    assert.ok(Math.abs(count - N * p) < bound, `eps ${stair.epsilon}: ${count} within +-${limit}, expected ${(N * p).toFixed(0)} +- ${bound.toFixed(0)}`);
    const laplaceCount = inner(laplaceTwin(stair));
    assert.ok(Math.abs(laplaceCount - N * p) >= bound, `eps ${stair.epsilon}: Laplace also gives ${laplaceCount}`);
  }
});

seededTest("staircase noise is symmetric about 0", 112, () => {
  for (const stair of STAIRCASE_CASES) {
    const noise = noiseSamples(staircaseQuestion(stair), stair.value);
    const positive = noise.filter((z) => z > 0);
    const negative = noise.filter((z) => z < 0).map((z) => -z);
    assert.ok(Math.abs(positive.length - N / 2) < 3.3 * Math.sqrt(N / 4), `${positive.length} positive of ${N}`);
    // Two-sample KS between the positive side and the mirrored negative side (alpha 0.001).
    const a = Float64Array.from(positive).sort();
    const b = Float64Array.from(negative).sort();
    let i = 0;
    let j = 0;
    let d = 0;
    while (i < a.length && j < b.length) {
      const x = Math.min(a[i], b[j]);
      while (i < a.length && a[i] <= x) i++;
      while (j < b.length && b[j] <= x) j++;
      d = Math.max(d, Math.abs(i / a.length - j / b.length));
    }
    const critical = 1.9495 * Math.sqrt((a.length + b.length) / (a.length * b.length));
    assert.ok(d < critical, `eps ${stair.epsilon}: two-sample KS D=${d.toFixed(5)} >= ${critical.toFixed(5)}`);
  }
});

test("additive_staircase refuses a missing or invalid epsilon or sensitivity, naming it", () => {
  const q = (mechanism) => ({ key: "hours", type: "continuous", range: [0, 80], mechanism: { name: "additive_staircase", ...mechanism } });
  assert.throws(() => distortAnswer(q({ sensitivity: 1 }), 10), /question "hours": mechanism parameter "epsilon" must be a positive number, got undefined/);
  assert.throws(() => distortAnswer(q({ epsilon: 1 }), 10), /mechanism parameter "sensitivity" must be a positive number, got undefined/);
  for (const bad of [0, -1, "1", NaN, Infinity, null, true]) {
    assert.throws(() => distortAnswer(q({ epsilon: bad, sensitivity: 1 }), 10), /mechanism parameter "epsilon" must be a positive number/, `epsilon ${bad}`);
    assert.throws(() => distortAnswer(q({ epsilon: 1, sensitivity: bad }), 10), /mechanism parameter "sensitivity" must be a positive number/, `sensitivity ${bad}`);
  }
  assert.throws(() => distortAnswer(q({ epsilon: 1, sensitivity: 1 }), 81), /outside the range \[0, 80\]/);
  // A positive but subnormal eps makes the geometric stair count overflow: refused, not sent as Infinity.
  assert.throws(() => distortAnswer(q({ epsilon: 1e-310, sensitivity: 1 }), 10), /question "hours": mechanism parameters "epsilon" 1e-310 and "sensitivity" give noise too large to send/);
  assert.ok(Number.isFinite(distortAnswer(q({ epsilon: 1, sensitivity: 1 }), 10)));
});

seededTest("retention-replacement keeps the value with probability p, else uniform on the range", 106, () => {
  const sent = Array.from({ length: N }, () => distortAnswer(rooms, 3));
  const kept = sent.filter((x) => x === 3).length;
  // binomial(N, 0.6 + 0.4 * 0) standard deviation ~ 155; 3.3 sd ~ alpha 0.001
  assert.ok(Math.abs(kept - 0.6 * N) < 3.3 * Math.sqrt(N * 0.6 * 0.4), `kept ${kept}`);
  const replaced = sent.filter((x) => x !== 3);
  const d = ksStatistic(replaced, (x) => (x - 1) / 8);
  assert.ok(d < 1.9495 / Math.sqrt(replaced.length), `KS D=${d}`);
});

test("mechanism none and negative_manual send the answer as it is", () => {
  assert.equal(distortAnswer(skips, "often"), "often");
  assert.equal(distortAnswer({ ...income, mechanism: { name: "none" } }, 1234.5), 1234.5);
  assert.equal(distortAnswer({ ...sex, mechanism: { name: "none" }, channel: undefined }, "M"), "M");
});

test("invalid input throws a clear error", () => {
  assert.throws(() => distortAnswer(sex, "X"), /question "sex": unknown category "X"/);
  assert.throws(() => distortAnswer(sex, 0), /unknown category 0/);
  assert.throws(() => distortAnswer(age, NaN), /question "age": the answer must be a finite number/);
  assert.throws(() => distortAnswer(age, "40"), /finite number/);
  assert.throws(() => distortAnswer(age, Infinity), /finite number/);
  assert.throws(() => distortAnswer(age, 120), /outside the range \[16, 100\]/);
  assert.throws(() => distortAnswer({ ...sex, mechanism: { name: "coin_flip" } }, "F"), /unknown mechanism "coin_flip"/);
  assert.throws(() => distortAnswer({ ...age, mechanism: { name: "additive_cauchy" } }, 40), /unknown mechanism "additive_cauchy"/);
  assert.throws(() => distortAnswer({ ...sex, channel: undefined }, "F"), /must carry a 2x2 "channel"/);
  assert.throws(() => distortAnswer({ ...sex, channel: [[0.7, 0.2], [0.3, 0.7]] }, "F"), /sums to 0.9/);
  assert.throws(() => distortAnswer({ ...income, mechanism: { name: "additive_gaussian", sigma: -1 } }, 10), /"sigma" must be a positive number/);
  assert.throws(() => distortAnswers(scheme, { shoe_size: "42" }), /unknown question "shoe_size"/);
});

function fakeStorage() {
  const map = new Map();
  return {
    map,
    getItem: (k) => (map.has(k) ? map.get(k) : null),
    setItem: (k, v) => map.set(k, String(v)),
  };
}

test("a participant's distorted answers are memoised per survey and question", () => {
  const storage = fakeStorage();
  const answers = { sex: "F", site: "D", age: 40, skips_class: "never", income: 3000 };
  const first = distortAnswers(scheme, answers, { participant: "p-1", storage });
  for (let attempt = 0; attempt < 20; attempt++) {
    assert.deepEqual(distortAnswers(scheme, answers, { participant: "p-1", storage }), first);
  }
  // Only drawn values are stored, never an answer sent as is (here the manual negative).
  assert.deepEqual([...storage.map.keys()].sort(), ["age", "income", "sex", "site"].map((q) => `privacy-distort:v1:3:p-1:${q}`).sort());
  assert.ok(![...storage.map.values()].includes("40"), "the true age must not be stored");
});

test("a changed true answer keeps the earlier draw (documented choice)", () => {
  const storage = fakeStorage();
  const first = distortAnswers(scheme, { age: 40 }, { participant: "p-2", storage });
  assert.deepEqual(distortAnswers(scheme, { age: 70 }, { participant: "p-2", storage }), first);
});

seededTest("memos are separate per participant and per survey", 107, () => {
  const storage = fakeStorage();
  const seen = new Set();
  for (let p = 0; p < 50; p++) seen.add(distortAnswers(scheme, { income: 3000 }, { participant: `p-${p}`, storage }).income);
  seen.add(distortAnswers({ ...scheme, survey: 4 }, { income: 3000 }, { participant: "p-0", storage }).income);
  assert.equal(seen.size, 51);
});

seededTest("without a participant nothing is memoised and every call draws afresh", 108, () => {
  const storage = fakeStorage();
  const seen = new Set();
  for (let s = 0; s < 50; s++) seen.add(distortAnswers(scheme, { income: 3000 }, { storage }).income);
  assert.equal(seen.size, 50);
  assert.equal(storage.map.size, 0);
});

test("a bad answer memoises nothing, even for the valid answers before it", () => {
  const storage = fakeStorage();
  assert.throws(() => distortAnswers(scheme, { sex: "F", age: "forty" }, { participant: "p-3", storage }), /finite number/);
  assert.equal(storage.map.size, 0);
});

seededTest("works without localStorage (Node) and with storage that throws (private windows)", 109, () => {
  assert.equal(globalThis.localStorage, undefined);
  const a = distortAnswers(scheme, { sex: "F", income: 3000 }, { participant: "p-4" });
  assert.ok(sex.categories.includes(a.sex) && Number.isFinite(a.income));
  const throwing = { getItem() { throw new Error("SecurityError"); }, setItem() { throw new Error("QuotaExceededError"); } };
  const b = distortAnswers(scheme, { sex: "F", income: 3000 }, { participant: "p-4", storage: throwing });
  assert.ok(sex.categories.includes(b.sex) && Number.isFinite(b.income));
  // and the sampler stays correct when memoisation is unavailable
  let keptF = 0;
  for (let s = 0; s < N; s++) if (distortAnswers(scheme, { sex: "F" }, { participant: `q-${s}`, storage: throwing }).sex === "F") keptF += 1;
  const { statistic } = chiSquare([keptF, N - keptF], sex.channel[0], N);
  assert.ok(statistic < CHI2_CRITICAL_0_001[1], `chi-square ${statistic}`);
});

test("a stale memo the scheme could not have produced is ignored", () => {
  const storage = fakeStorage();
  storage.setItem("privacy-distort:v1:3:p-5:sex", JSON.stringify("X"));
  const sent = distortAnswers(scheme, { sex: "F" }, { participant: "p-5", storage });
  assert.ok(["F", "M"].includes(sent.sex));
  assert.equal(storage.getItem("privacy-distort:v1:3:p-5:sex"), JSON.stringify(sent.sex));
});

// The one unseeded test.  It proves the library draws from the platform's
// cryptographic generator: every draw goes through the real
// crypto.getRandomValues (counted by a pass-through wrapper), two runs of the
// same answers differ, and randomised response follows its row at alpha = 1e-6
// (a chance failure about once in a million runs).
test("unseeded smoke test: the real crypto.getRandomValues drives the sampler (alpha 1e-6)", () => {
  useRealCrypto();
  const real = globalThis.crypto.getRandomValues;
  let calls = 0;
  Object.defineProperty(globalThis.crypto, "getRandomValues", {
    value: (array) => {
      calls += 1;
      return real.call(globalThis.crypto, array);
    },
    configurable: true,
    writable: true,
  });
  try {
    let keptF = 0;
    for (let s = 0; s < N; s++) if (distortAnswer(sex, "F") === "F") keptF += 1;
    assert.ok(calls >= N, `only ${calls} calls to crypto.getRandomValues for ${N} draws`);
    const { statistic, df } = chiSquare([keptF, N - keptF], sex.channel[0], N);
    assert.ok(statistic < CHI2_CRITICAL_1E_6[df], `chi-square ${statistic.toFixed(2)} >= ${CHI2_CRITICAL_1E_6[df]}`);
    // 64 independent uniforms repeat across two runs with probability ~ 2^-3392.
    const first = Array.from({ length: 64 }, () => uniform());
    const second = Array.from({ length: 64 }, () => uniform());
    assert.notDeepEqual(first, second);
  } finally {
    useRealCrypto();
  }
});

test("unseeded smoke test: staircase noise draws from the real crypto.getRandomValues (alpha 1e-6)", () => {
  useRealCrypto();
  const real = globalThis.crypto.getRandomValues;
  let calls = 0;
  Object.defineProperty(globalThis.crypto, "getRandomValues", {
    value: (array) => {
      calls += 1;
      return real.call(globalThis.crypto, array);
    },
    configurable: true,
    writable: true,
  });
  try {
    const stair = STAIRCASE_CASES[0];
    const limit = staircaseConstants(stair.epsilon, stair.sensitivity).gamma * stair.sensitivity;
    const noise = noiseSamples(staircaseQuestion(stair), stair.value);
    assert.ok(calls >= N, `only ${calls} calls to crypto.getRandomValues for ${N} draws`);
    const p = staircaseInnerMass(stair.epsilon);
    const count = noise.filter((z) => Math.abs(z) < limit).length;
    // 4.9 standard deviations: two-sided alpha ~ 1e-6.
    assert.ok(Math.abs(count - N * p) < 4.9 * Math.sqrt(N * p * (1 - p)), `${count} within +-${limit}`);
  } finally {
    useRealCrypto();
  }
});

test("the seeded generator replaces crypto.getRandomValues and is restored", () => {
  const draw = () => Array.from({ length: 8 }, () => uniform());
  const first = withSeed(7, draw);
  assert.deepEqual(withSeed(7, draw), first);
  assert.notDeepEqual(withSeed(8, draw), first);
  assert.equal(globalThis.crypto.getRandomValues, Object.getPrototypeOf(globalThis.crypto).getRandomValues);
});

test("submitResponse keeps the withdrawal token beside the memo; withdrawResponse posts it in the body", async () => {
  const { submitResponse, withdrawResponse, withdrawalToken } = await import("../../clients/js/src/distort.js");
  const items = new Map();
  const storage = { getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, v), removeItem: (k) => items.delete(k) };
  const calls = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (url, init) => {
    calls.push({ url, method: init.method, body: init.body ? JSON.parse(init.body) : undefined });
    if (url.endsWith("/responses/")) {
      return new Response(JSON.stringify({ participant: "p-1", withdrawal_token: "tok-9" }), { status: 201 });
    }
    return new Response(null, { status: 204 });
  };
  try {
    const body = await submitResponse("https://api.example.org/", 3, "KEY", "p-1", { sex: "F" }, { storage });
    assert.equal(body.withdrawal_token, "tok-9");
    assert.equal(withdrawalToken(3, "p-1", { storage }), "tok-9");
    await withdrawResponse("https://api.example.org", 3, "KEY", "p-1", { storage });
    assert.deepEqual(calls[1], {
      url: "https://api.example.org/api/v1/surveys/3/responses/withdraw/",
      method: "POST",
      body: { participant: "p-1", withdrawal_token: "tok-9" },
    });
    assert.ok(!calls[1].url.includes("p-1"), "no reference in the URL");
    assert.equal(withdrawalToken(3, "p-1", { storage }), null);
    await assert.rejects(withdrawResponse("https://api.example.org", 3, "KEY", "p-1", { storage }), /no withdrawal token/);
  } finally {
    globalThis.fetch = realFetch;
  }
});

// --- Issue 28: reused questions and the privacy budget -----------------------------

seededTest("a question asked again re-sends the report kept for the earlier question", 281, () => {
  const storage = fakeStorage();
  const first = distortAnswers(scheme, { sex: "F", income: 3000 }, { participant: "p-7", storage });
  const again = {
    survey: 9,
    status: "open",
    questions: [
      { ...sex, key: "sex_again", reuse: { survey: 3, question: "sex" } },
      { ...scheme.questions.find((q) => q.key === "income"), key: "income_again", reuse: { survey: 3, question: "income" } },
    ],
  };
  for (let attempt = 0; attempt < 20; attempt++) {
    const sent = distortAnswers(again, { sex_again: "M", income_again: 9000 }, { participant: "p-7", storage });
    assert.deepEqual(sent, { sex_again: first.sex, income_again: first.income });
  }
  // Nothing new is kept: the memo stays the earlier question's.
  assert.ok(![...storage.map.keys()].some((k) => k.includes(":9:")));
  // Another participant, or no earlier report on this device: a fresh draw, kept under
  // the earlier question so that later askings agree with it.
  const fresh = distortAnswers(again, { sex_again: "M" }, { participant: "p-8", storage });
  assert.equal(storage.getItem("privacy-distort:v1:3:p-8:sex"), JSON.stringify(fresh.sex_again));
});

test("fetchBudget proves the participant with a kept token of the consultation", async () => {
  const { fetchBudget, budgetOutlook } = await import("../../clients/js/src/distort.js");
  const items = new Map([
    ["privacy-distort:v1-withdrawal:3:p-1", JSON.stringify("tok-other-consultation")],
    ["privacy-distort:v1-withdrawal:4:p-1", JSON.stringify("tok-4")],
    ["privacy-distort:v1-withdrawal:4:p-2", JSON.stringify("tok-p2")],
  ]);
  const storage = {
    getItem: (k) => (items.has(k) ? items.get(k) : null),
    setItem: (k, v) => items.set(k, v),
    removeItem: (k) => items.delete(k),
    key: (i) => [...items.keys()][i] ?? null,
    get length() { return items.size; },
  };
  const calls = [];
  const realFetch = globalThis.fetch;
  globalThis.fetch = async (url, init) => {
    const body = JSON.parse(init.body);
    calls.push({ url, body });
    if (body.withdrawal_token !== "tok-4") return new Response(JSON.stringify({ detail: "No participant" }), { status: 404 });
    return new Response(JSON.stringify({ budget: 4, spent: 1.5, remaining: 2.5 }), { status: 200 });
  };
  try {
    const found = await fetchBudget("https://api.example.org", 5, "KEY", "p-1", { storage });
    assert.deepEqual(found, { budget: 4, spent: 1.5, remaining: 2.5 });
    assert.ok(calls.every((c) => c.url === "https://api.example.org/api/v1/surveys/5/responses/budget/"));
    assert.ok(calls.every((c) => c.body.participant === "p-1"), "never another participant's token");
    assert.equal(await fetchBudget("https://api.example.org", 5, "KEY", "p-9", { storage }), null);
    const scheme5 = { survey: 5, status: "open", epsilon_total: 2, privacy_budget: 4, questions: [] };
    assert.deepEqual(budgetOutlook(scheme5, found), { budget: 4, spent: 1.5, cost: 2, after: 3.5, fits: true });
    assert.equal(budgetOutlook({ ...scheme5, epsilon_total: 3 }, found).fits, false);
    assert.equal(budgetOutlook(scheme5, null).spent, 0);
    assert.equal(budgetOutlook({ ...scheme5, privacy_budget: null }, found).fits, true);
  } finally {
    globalThis.fetch = realFetch;
  }
});
