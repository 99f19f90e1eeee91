// Exact discrete noise on the reporting grid (server issue 31), in distort.js.
//
// Each sampler against its published law by a chi-square test on grid counts
// (seeded; alpha 0.001, Wilson-Hilferty critical value), every report exactly a
// grid value, and the last-bits attack of the issue replayed: against the old
// floating-point Laplace noise it rules ages out, against the grid it rules out
// none the published law allows.

import { test } from "node:test";
import assert from "node:assert/strict";
import { dirname, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { withSeed } from "./seeded_crypto.mjs";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
const DISTORT_JS = process.env.DISTORT_JS ?? "clients/js/src/distort.js";
const lib = await import(pathToFileURL(resolve(REPO, DISTORT_JS)).href);
const { distortAnswer, discreteLaplace, discreteGaussian, discreteStaircase, bernoulliExp, parseFraction, randomBelow } = lib;

Math.random = () => {
  throw new Error("Math.random must not be used by distort.js");
};

const N = 20_000;

function chi2Critical(df) {
  const a = 2 / (9 * df);
  return df * (1 - a + 3.0902 * Math.sqrt(a)) ** 3;
}

function chiSquare(draws, mass) {
  const weights = new Map();
  let total = 0;
  for (let k = -400; k <= 400; k++) {
    weights.set(k, mass(k));
    total += mass(k);
  }
  const counts = new Map();
  for (const k of draws) counts.set(k, (counts.get(k) ?? 0) + 1);
  let statistic = 0;
  let cells = 0;
  let pooledO = 0;
  let pooledE = 0;
  for (const [k, w] of weights) {
    const expected = (N * w) / total;
    if (expected >= 5) {
      statistic += ((counts.get(k) ?? 0) - expected) ** 2 / expected;
      cells += 1;
    } else {
      pooledO += counts.get(k) ?? 0;
      pooledE += expected;
    }
  }
  for (const [k, c] of counts) if (k < -400 || k > 400) pooledO += c;
  if (pooledE >= 5) {
    statistic += (pooledO - pooledE) ** 2 / pooledE;
    cells += 1;
  } else {
    assert.ok(pooledO <= Math.max(5, 3 * pooledE + 3), `too many draws in cells of tiny probability: ${pooledO}`);
  }
  return { statistic, df: cells - 1 };
}

const f = (text) => parseFraction(text, "test");

const LAWS = {
  "discrete_laplace(5/2)": [() => discreteLaplace(f("5/2")), (k) => Math.exp(-Math.abs(k) / 2.5)],
  "discrete_laplace(1/3)": [() => discreteLaplace(f("1/3")), (k) => Math.exp(-3 * Math.abs(k))],
  "discrete_gaussian(9/4)": [() => discreteGaussian(f("9/4")), (k) => Math.exp((-k * k) / 4.5)],
  "discrete_gaussian(1/5)": [() => discreteGaussian(f("1/5")), (k) => Math.exp(-2.5 * k * k)],
  "discrete_staircase(1, 6, 2)": [
    () => discreteStaircase(f("1"), 6n, 2n),
    (k) => Math.exp(-(Math.floor(Math.abs(k) / 6) + (Math.abs(k) % 6 >= 2 ? 1 : 0))),
  ],
  "discrete_staircase(4, 1, 1)": [() => discreteStaircase(f("4"), 1n, 1n), (k) => Math.exp(-4 * Math.abs(k))],
};

for (const [name, [sample, mass]] of Object.entries(LAWS)) {
  test(`${name} follows its published law (chi-square, seed 20261127)`, () =>
    withSeed(20261127, () => {
      const draws = [];
      for (let i = 0; i < N; i++) {
        const k = sample();
        assert.equal(typeof k, "bigint");
        draws.push(Number(k));
      }
      const { statistic, df } = chiSquare(draws, mass);
      assert.ok(statistic < chi2Critical(df), `chi-square ${statistic} on ${df} df`);
    }));
}

test("bernoulliExp has probability exp(-gamma) and randomBelow is uniform (seed 5)", () =>
  withSeed(5, () => {
    for (const gamma of ["0", "1/3", "1", "5/2"]) {
      let hits = 0;
      for (let i = 0; i < N; i++) hits += bernoulliExp(f(gamma)) ? 1 : 0;
      const p = Math.exp(-Number(f(gamma).n) / Number(f(gamma).d));
      assert.ok(Math.abs(hits - N * p) <= 4 * Math.sqrt(N * p * (1 - p)) + 1e-9, `${gamma}: ${hits}`);
    }
    const counts = [0, 0, 0, 0, 0, 0, 0];
    for (let i = 0; i < N; i++) counts[Number(randomBelow(7n))] += 1;
    const { statistic, df } = chiSquare(
      counts.flatMap((c, k) => Array(c).fill(k)),
      (k) => (k >= 0 && k < 7 ? 1 : 0),
    );
    assert.ok(statistic < chi2Critical(df));
  }));

function question(law, resolution = 0.001, mechanism = { name: "additive_laplace", scale: 5 }) {
  return { key: "age", type: "continuous", range: [16, 100], mechanism, resolution, grid: { origin: 16, resolution, law } };
}

const GRID_LAWS = [
  { name: "discrete_laplace", scale: "5000" },
  { name: "discrete_gaussian", sigma2: "640000" },
  { name: "discrete_uniform", half_width: 10000 },
  { name: "discrete_staircase", epsilon: "2", steps: 84000, inner: 22000 },
  { name: "retention_replacement", retain: "3/5", points: 84001 },
];

for (const law of GRID_LAWS) {
  test(`every ${law.name} report is exactly a grid value (seed 3)`, () =>
    withSeed(3, () => {
      const q = question(law);
      for (let i = 0; i < 1000; i++) {
        const value = 16 + (84 * i) / 1000 + 1e-7 * (i % 7);
        const sent = distortAnswer(q, value);
        const k = Math.round((sent - 16) / 0.001);
        assert.equal(sent, 16 + k * 0.001); // the double every client computes
        assert.equal(Number(JSON.stringify(sent)), sent); // the decimal sent parses back exactly
      }
    }));
}

test("randomised rounding is unbiased and exact (seed 4)", () =>
  withSeed(4, () => {
    const q = { ...question({ name: "discrete_uniform", half_width: 0 }, 0.5), grid: { origin: 0, resolution: 0.5, law: { name: "discrete_uniform", half_width: 0 } }, range: [0, 10] };
    let up = 0;
    for (let i = 0; i < N; i++) {
      const sent = distortAnswer(q, 0.3);
      assert.ok(sent === 0 || sent === 0.5);
      up += sent === 0.5 ? 1 : 0;
    }
    assert.ok(Math.abs(up / N - 0.6) < 4 * Math.sqrt(0.24 / N), `${up / N}`);
  }));

test("a broken grid law is refused naming the question", () => {
  assert.throws(() => distortAnswer(question({ name: "discrete_laplace", scale: 5.5 }), 43), /question "age".*exact fraction/);
  assert.throws(() => distortAnswer(question({ name: "discrete_uniform", half_width: 1.5 }), 43), /question "age".*whole number/);
  assert.throws(() => distortAnswer(question({ name: "discrete_cauchy" }), 43), /question "age".*unknown grid law/);
});

// --- the last-bits attack (issue 31), replayed ------------------------------------

const TWO53 = 2 ** 53;
const oldLaplace = (x, u) => x + (u < 0.5 ? 5 * Math.log(2 * u) : -5 * Math.log(2 * (1 - u)));

// Whether some 53-bit uniform u = k / 2^53 gives exactly `report` from `candidate`:
// the report is non-decreasing in k, so a binary search settles it exactly.
function reachable(report, candidate, noise) {
  let lo = 1;
  let hi = TWO53 - 1;
  if (noise(candidate, lo / TWO53) > report || noise(candidate, hi / TWO53) < report) return false;
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2); // (lo + hi) can exceed 2^53
    if (noise(candidate, mid / TWO53) < report) lo = mid + 1;
    else hi = mid;
  }
  return noise(candidate, lo / TWO53) === report;
}

test("the last-bits attack rules ages out under the old Laplace noise (seed 31)", () =>
  withSeed(31, () => {
    const q = { key: "age", type: "continuous", range: [16, 100], mechanism: { name: "additive_laplace", scale: 5 } };
    let ruledOut = 0;
    const reports = 200;
    for (let i = 0; i < reports; i++) {
      const truth = 30 + (i % 50);
      const report = distortAnswer(q, truth);
      for (let d = -5; d <= 5; d++) ruledOut += reachable(report, truth + d, oldLaplace) ? 0 : 1;
    }
    assert.ok(ruledOut / reports > 0.5, `${ruledOut / reports} of 11 ruled out per report`);
  }));

for (const [law, mechanism, support] of [
  [{ name: "discrete_uniform", half_width: 10 }, { name: "additive_uniform", half_width: 10 }, 10],
  [{ name: "discrete_laplace", scale: "5" }, { name: "additive_laplace", scale: 5 }, Infinity],
]) {
  test(`the last-bits attack rules out nothing on the grid: ${law.name} (seed 31)`, () =>
    withSeed(31, () => {
      const q = question(law, 1, mechanism);
      for (let i = 0; i < 300; i++) {
        const truth = 30 + (i % 50);
        const report = distortAnswer(q, truth);
        const k = Math.round(report - 16);
        assert.equal(report, 16 + k * 1);
        for (let d = -5; d <= 5; d++) {
          const steps = k - (truth + d - 16); // the noise step that reaches the report
          const reach = Math.abs(steps) <= (law.half_width ?? Infinity);
          assert.equal(reach, Math.abs(report - (truth + d)) <= support);
        }
      }
    }));
}
