"""Accuracy of the estimates on realistic data (issue 10): bias at scale, coverage, speed.

Run: ``python bench/bench_accuracy.py`` (every part) or name parts: ``speed``,
``never_reported``, ``bias``, ``coverage_em``, ``coverage_joint30k``,
``coverage_joint30k_real`` (its real-valued control), ``coverage_joint30k_step`` (with
``step=1`` declared), ``coverage_joint1k``, ``coverage_mean``, ``grid`` (issue 31: the
coverage cases under the old continuous law and the reporting grid's discrete laws,
side by side in one run), ``change_coverage`` and ``change_bias`` (issue 29: the change
kind's (before, after) table; written to ``bench/results/bench_accuracy_change.md`` when
only they run).
``BENCH_ACCURACY_SURVEYS`` sets the simulated surveys per coverage case (default 300, the
issue's minimum). The joint count at n = 1,000 runs ``BENCH_ACCURACY_BATCHES`` (default
3) independent batches of that many surveys (batch ``b`` seeded ``1000 + 100003 b``):
each batch's coverage is printed, and its target applies to the pooled coverage (one
run of the old rule gave 96.3%, two others 98.0% and 98.3%).

Targets (issue 10), each printed beside a baseline that is either measured in this run
(the IBU timing) or a figure from the issue or the previous session's measurement,
labelled "not re-measured":

* joint count ``sex = F and age <= 30`` with whole-number ages (RR 0.75 on sex, ±10
  uniform noise on age) at n = 10^6, mean over 10 distortion seeds: |bias| < 0.5%, with
  and without a declared ``step`` (baseline -2.8%);
* coverage of nominal 95% intervals within [93%, 97%] over >= 300 simulated surveys for:
  ``em_as`` with a 2% category (baseline 87.5%), the joint count with a whole-number
  continuous condition at n = 30,000, the joint count at n = 1,000 (baseline 88.5% at
  n = 200), the ``unbiased`` mean under a continuous condition (baseline 91.0%);
* the default ``em_as`` with its interval on 10^6 reports of 10 categories (counting
  included) costs at most 1/20 of multi_freq_ldpy's ``GRR_Aggregator_IBU`` estimate
  alone, both timed in this run, median of 5 each (baseline 1/16 under load, 1/24 idle).

Coverage simulations draw a fresh population and fresh distortion per survey; the
estimators run as the API runs them (default methods, default intervals).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Table, finish_all, median_time, write_results
from privacy.mechanisms import AdditiveUniform, distort_codes, randomised_response
from reconstruction.algorithms import em_as, reported_counts
from reconstruction.algorithms.queries import (
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
    count_joint,
    mean,
)
from reconstruction.algorithms.simulation import simulate_candidates

SURVEYS = int(os.environ.get("BENCH_ACCURACY_SURVEYS", "300"))
# Independent batches of SURVEYS surveys for the joint count at n = 1,000, whose target
# is met by the pooled coverage (issue 10: one run gave 96.3%, two others 98.0% and
# 98.3%); batch b is seeded n + SEED_OFFSET * b.
BATCHES_1K = int(os.environ.get("BENCH_ACCURACY_BATCHES", "3"))
SEED_OFFSET = 100_003
LOW, HIGH = 93.0, 97.0
AGE_NOISE = AdditiveUniform(10.0)
SEX_CHANNEL = randomised_response(2, 0.75)
WHERE = [Condition("sex", "in", {0}), Condition("age", "lte", 30)]


# The law residents' devices use: "continuous" (floating-point noise, surveys created
# before issue 31) or "grid" (the reporting grid's exact discrete laws, as the API builds
# them: resolution = step, else 0.001 for ages 16-100 and 1 for incomes 0-20,000).
LAW = "continuous"


def _age_noise(step: float | None):  # type: ignore[no-untyped-def]
    if LAW == "grid":
        from privacy.mechanisms.grid import default_resolution, grid_noise

        return grid_noise(AGE_NOISE, 16.0, default_resolution(16.0, 100.0, step))
    return AGE_NOISE


def _table(n: int, rng: np.random.Generator, *, step: float | None, whole: bool = True):  # type: ignore[no-untyped-def]
    pool = simulate_candidates(n, rng=rng)
    age = np.floor(pool.age) if whole else pool.age
    age_noise, income_noise = _age_noise(step), _income_noise()
    table = {
        "sex": DiscreteAttribute(distort_codes(pool.sex, SEX_CHANNEL, rng), SEX_CHANNEL),
        "age": ContinuousAttribute(age_noise.distort(age, rng), age_noise, 16.0, 100.0, step=step),
        "income": ContinuousAttribute(
            income_noise.distort(pool.income, rng), income_noise, 0.0, 20_000.0
        ),
    }
    return pool, age, table


def _income_noise():  # type: ignore[no-untyped-def]
    from privacy.mechanisms import AdditiveGaussian

    if LAW == "grid":
        from privacy.mechanisms.grid import grid_noise

        return grid_noise(AdditiveGaussian(800.0), 0.0, 1.0)
    return AdditiveGaussian(800.0)


def grid(table: Table) -> None:
    """Issue 31: the same coverage cases under the old continuous law and the reporting
    grid's discrete laws, in one run (same seeds, so the populations are the same; the
    distortion draws differ). Each grid row's baseline is the old law's figure."""
    global LAW
    cases = (
        ("whole-number age <= 30, n=30,000, step=1", 30_000, 1.0, True),
        ("whole-number age <= 30, n=30,000, no step", 30_000, None, True),
        ("real-valued age <= 30, n=30,000, no step", 30_000, None, False),
    )
    for label, n, step, whole in cases:
        figures = {}
        for law in ("continuous", "grid"):
            LAW = law
            hits, errors, _, _ = _joint_hits(
                n, np.random.default_rng(n + 7), step=step, whole=whole
            )
            figures[law] = (100.0 * float(np.mean(hits)), 100.0 * float(np.mean(errors)),
                            100.0 * float(np.std(errors, ddof=1)))  # fmt: skip
        LAW = "continuous"
        old, new = figures["continuous"], figures["grid"]
        # Two coverages of SURVEYS surveys differ by noise alone with sd about
        # sqrt(2 * 0.95 * 0.05 / SURVEYS); "unchanged" means within 3 of those.
        noise = 100.0 * math.sqrt(2 * 0.95 * 0.05 / SURVEYS)
        table.add(
            f"grid: joint count coverage, {label} ({SURVEYS} surveys)",
            new[0] / 100.0,
            unit="%",
            baseline=old[0] / 100.0,
            baseline_name="old continuous law, this run",
            target=f"within 3 x {noise:.1f} points of the old law",
            ok=abs(new[0] - old[0]) <= 3 * noise,
        )
        table.note(
            f"grid, {label}: mean error {new[1]:+.2f}% (sd {new[2]:.2f}%) against the old "
            f"law's {old[1]:+.2f}% (sd {old[2]:.2f}%)"
        )
    hits_by_law = {}
    for law in ("continuous", "grid"):
        LAW = law
        rng = np.random.default_rng(5_000 + 7)
        hits = 0
        for _ in range(SURVEYS):
            pool, _, data = _table(5_000, rng, step=None, whole=False)
            truth = float(pool.income[pool.age <= 30].mean())
            low, high = mean(data, "income", [Condition("age", "lte", 30)], rng=rng).ci95
            hits += int(low <= truth <= high)
        hits_by_law[law] = 100.0 * hits / SURVEYS
    LAW = "continuous"
    noise = 100.0 * math.sqrt(2 * 0.95 * 0.05 / SURVEYS)
    table.add(
        f"grid: unbiased mean of income | age <= 30, n=5,000 ({SURVEYS} surveys)",
        hits_by_law["grid"] / 100.0,
        unit="%",
        baseline=hits_by_law["continuous"] / 100.0,
        baseline_name="old continuous law, this run",
        target=f"within 3 x {noise:.1f} points of the old law",
        ok=abs(hits_by_law["grid"] - hits_by_law["continuous"]) <= 3 * noise,
    )


def _coverage_row(table: Table, name: str, hits: int, surveys: int, baseline: str) -> None:
    share = 100.0 * hits / surveys
    table.add(
        f"{name} ({surveys} surveys)",
        share / 100.0,
        unit="%",
        baseline_name=baseline,
        target=f"within [{LOW:g}, {HIGH:g}]%",
        ok=LOW <= share <= HIGH,
    )


def speed(table: Table) -> None:
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_IBU

    k, epsilon = 10, 2.0
    rng = np.random.default_rng(0)
    retain = math.exp(epsilon) / (math.exp(epsilon) + k - 1)
    channel = randomised_response(k, retain)
    truth = rng.dirichlet(np.ones(k))
    reports = distort_codes(rng.choice(k, 10**6, p=truth), channel, rng).astype(np.int64)
    ours = median_time(lambda: em_as(reported_counts(reports, k), channel), repeat=5)
    ibu = median_time(lambda: GRR_Aggregator_IBU(reports, k, epsilon), repeat=5)
    table.add(
        "default em_as + 95% interval, 10^6 reports, k=10 (counting included)",
        ours,
        unit="s",
        baseline=ibu,
        baseline_name="GRR_Aggregator_IBU estimate alone, this run (issue: 1/16 loaded, 1/24 idle)",
        target="<= 0.05x baseline",
        ok=ours <= 0.05 * ibu,
    )
    table.note(f"em_as with interval costs 1/{ibu / ours:.0f} of IBU's estimate")


def never_reported(table: Table) -> None:
    """A category nobody reported (no distortion, 10 categories, n = 10^6).

    With the identity channel a true count of 1 gives a reported share of 1/n; the
    upper bound must reach it (issue 10; [0, 0] before last session).
    """
    n = 10**6
    counts = np.full(10, n / 9.0)
    counts[9] = 0.0
    high = float(em_as(counts, np.eye(10)).ci95[9, 1])
    table.add(
        "never-reported category, n=10^6: upper bound of its count",
        high,
        baseline=1.0,
        baseline_name="count giving a reported share of 1/n",
        target=">= baseline",
        ok=high >= 1.0,
    )


def bias(table: Table) -> None:
    """Joint count bias at n = 10^6 over 10 distortion seeds of one population.

    Three cases: whole-number ages with ``step=1`` declared, the same without a step
    (whole numbers found in the reports, :func:`whole_number_step`), and real-valued ages
    without a step (the interval model must stay; the control). The standard error of
    the 10-seed mean is printed beside each (about 0.17%: one survey's error has a
    standard deviation of about 0.55% at 10^6).
    """
    from reconstruction.algorithms.continuous import whole_number_step

    n, seeds = 10**6, 10
    pool = simulate_candidates(n, rng=np.random.default_rng(0))
    cases = (
        ("whole-number ages, step=1 declared", True, 1.0, "last session -0.5%"),
        ("whole-number ages, no step declared", True, None, "issue -2.8%, last session -6.0%"),
        ("real-valued ages, no step declared", False, None, "issue -0.3% (its control)"),
    )
    for label, whole, step, before in cases:
        age = np.floor(pool.age) if whole else pool.age
        truth = float(np.sum((pool.sex == 0) & (age <= 30)))
        errors, detected = [], 0
        for seed in range(seeds):
            rng = np.random.default_rng(100 + seed)
            reported = AGE_NOISE.distort(age, rng)
            data = {
                "sex": DiscreteAttribute(distort_codes(pool.sex, SEX_CHANNEL, rng), SEX_CHANNEL),
                "age": ContinuousAttribute(reported, AGE_NOISE, 16.0, 100.0, step=step),
            }
            errors.append(count_joint(data, WHERE, ci=False).estimate / truth - 1.0)
            detected += step is None and whole_number_step(reported, AGE_NOISE, 16, 100) == 1.0
        value = 100.0 * float(np.mean(errors))
        spread = 100.0 * float(np.std(errors, ddof=1)) / math.sqrt(seeds)
        table.add(
            f"joint count bias, {label}, n=10^6, mean of {seeds} seeds",
            value / 100.0,
            unit="%",
            baseline_name=f"not re-measured: {before}",
            target="|bias| < 0.5%",
            ok=abs(value) < 0.5,
        )
        found = "" if step else f"; whole numbers detected in {detected} of {seeds} surveys"
        table.note(f"{label}: mean {value:+.2f}%, standard error of the mean {spread:.2f}%{found}")


def coverage_em(table: Table) -> None:
    rng = np.random.default_rng(11)
    truth = np.array([0.5, 0.25, 0.15, 0.08, 0.02])
    channel = randomised_response(5, 0.6)
    n, hits = 2_000, 0
    for _ in range(SURVEYS):
        counts = rng.multinomial(n, truth)
        codes = np.repeat(np.arange(5), counts)
        reported = reported_counts(distort_codes(codes, channel, rng), 5)
        low, high = em_as(reported, channel).ci95[4]
        hits += int(low <= counts[4] <= high)
    _coverage_row(table, "em_as coverage of a 2% category (k=5, RR 0.6, n=2000)", hits,
                  SURVEYS, "not re-measured: issue 87.5%")  # fmt: skip


def _joint_hits(
    n: int, rng: np.random.Generator, *, step: float | None, whole: bool
) -> tuple[list[bool], list[float], int, int]:
    """One batch of ``SURVEYS`` simulated surveys of ``sex = F and age <= 30``: whether
    each interval covered, each relative error, and in how many surveys whole numbers
    were detected or the two models averaged."""
    hits, errors, averaged, lattice = [], [], 0, 0
    for _ in range(SURVEYS):
        pool, age, data = _table(n, rng, step=step, whole=whole)
        truth = int(np.sum((pool.sex == 0) & (age <= 30)))
        result = count_joint(data, WHERE, rng=rng)
        low, high = result.ci95
        hits.append(bool(low <= truth <= high))
        errors.append(result.estimate / truth - 1.0)
        averaged += any("cannot tell" in note for note in result.notes)
        lattice += any("show whole numbers" in note for note in result.notes)
    return hits, errors, averaged, lattice


def _joint_coverage(
    table: Table,
    n: int,
    name: str,
    baseline: str,
    *,
    step: float | None,
    whole: bool = True,
    batches: int = 1,
) -> None:
    """Coverage of the joint count over ``batches`` independent batches of ``SURVEYS``
    surveys (batch ``b`` seeded ``n + SEED_OFFSET * b``; the real-valued control
    ``n + 1 + ...``). With several batches each batch's coverage is printed (informative)
    and the target applies to the pooled coverage, so one lucky batch cannot pass it."""
    pooled: list[bool] = []
    errors: list[float] = []
    averaged = lattice = 0
    for batch in range(batches):
        seed = (n if whole else n + 1) + SEED_OFFSET * batch
        hits, batch_errors, batch_averaged, batch_lattice = _joint_hits(
            n, np.random.default_rng(seed), step=step, whole=whole
        )
        if batches > 1:
            share = float(np.mean(hits))
            table.add(
                f"{name}, batch {batch + 1} of {batches} (seed {seed}, {SURVEYS} surveys)",
                share,
                unit="%",
                baseline_name=baseline,
                target="informative; the pooled row decides",
            )
            print(f"  {name}, batch {batch + 1}: {share:.1%}", flush=True)
        pooled += hits
        errors += batch_errors
        averaged += batch_averaged
        lattice += batch_lattice
    label = name if batches == 1 else f"{name}, pooled over {batches} batches"
    _coverage_row(table, label, sum(pooled), len(pooled), baseline)
    spread = 100.0 * float(np.std(errors, ddof=1)) / math.sqrt(len(errors))
    table.note(
        f"{name}: mean error {100.0 * float(np.mean(errors)):+.2f}% (standard error "
        f"{spread:.2f}%); whole numbers detected in {lattice}, models averaged in "
        f"{averaged} of {len(pooled)} surveys"
    )


def coverage_joint30k(table: Table) -> None:
    _joint_coverage(
        table,
        30_000,
        "joint count coverage, whole-number age <= 30, n=30,000, no step",
        "not re-measured: last session 86.3% (detection alone), before that 60%",
        step=None,
    )


def coverage_joint30k_real(table: Table) -> None:
    """The control of ``coverage_joint30k``: real-valued ages, no step."""
    _joint_coverage(
        table,
        30_000,
        "joint count coverage, real-valued age <= 30, n=30,000, no step (control)",
        "not measured before",
        step=None,
        whole=False,
    )


def coverage_joint30k_step(table: Table) -> None:
    """``coverage_joint30k`` with ``step=1`` declared (it passed in make test-slow)."""
    _joint_coverage(
        table,
        30_000,
        "joint count coverage, whole-number age <= 30, n=30,000, step=1 declared",
        "not re-measured: last session passed the 300-survey test-slow check",
        step=1.0,
    )


def coverage_joint1k(table: Table) -> None:
    _joint_coverage(
        table,
        1_000,
        "joint count coverage, whole-number age <= 30, n=1,000, no step",
        "not re-measured: issue 88.5% at n=200, last session 92.7% (one batch)",
        step=None,
        batches=BATCHES_1K,
    )


def coverage_mean(table: Table) -> None:
    rng = np.random.default_rng(5)
    hits, n = 0, 5_000
    where = [Condition("age", "lte", 30)]
    for _ in range(SURVEYS):
        pool, _, data = _table(n, rng, step=None, whole=False)
        truth = float(pool.income[pool.age <= 30].mean())
        low, high = mean(data, "income", where, rng=rng).ci95
        hits += int(low <= truth <= high)
    _coverage_row(table, "unbiased mean of income | age <= 30, n=5,000", hits, SURVEYS,
                  "not re-measured: issue 91.0%")  # fmt: skip


# --------------------------------------------------------------------------- change (issue 29)

CHANGE_RETAIN = 0.7
CHANGE_PAIRED = 1_000


def change_truth(k: int) -> np.ndarray:
    """A deliberation's true (before, after) shares: most keep their answer (60%), the
    rest move mostly to the neighbouring categories and toward the last one; uneven
    before shares (the first category the most common)."""
    before = np.linspace(2.0, 1.0, k)
    before /= before.sum()
    moves = np.zeros((k, k))
    for i in range(k):
        for j in range(k):
            if i != j:
                moves[i, j] = (1.0 / abs(i - j)) * (1.5 if j > i else 1.0)
        moves[i] *= 0.4 / moves[i].sum()
        moves[i, i] = 0.6
    return before[:, None] * moves


def _change_survey(k: int, n: int, rng: np.random.Generator, *, ci: bool = True):  # type: ignore[no-untyped-def]
    from reconstruction.algorithms.queries.change import change
    from reconstruction.algorithms.simulation import simulate_transitions

    channel = randomised_response(k, CHANGE_RETAIN)
    before, after = simulate_transitions(n, change_truth(k), rng=rng)
    truth = np.bincount(before * k + after, minlength=k * k).reshape(k, k).astype(float)
    result = change(
        DiscreteAttribute(distort_codes(before, channel, rng), channel),
        DiscreteAttribute(distort_codes(after, channel, rng), channel),
        ci=ci,
        rng=rng,
    )
    return truth, result


def change_coverage(table: Table) -> None:
    """Issue 29: 95% coverage of net_change and of the diagonal cells over SURVEYS
    simulated consultations of 1,000 paired residents, RR retain 0.7, k = 3 and 5: a
    fresh sample of residents from the population and fresh distortion each.

    The estimand the product promises (docs/analysts/change.md) is the population's
    transition shares: the issue mandates the participant bootstrap, which redraws the
    residents, so its spread is the estimate's sampling distribution over residents and
    their distortion, and "is the net shift real?" asks about the population the paired
    residents speak for. That is the target row. The sample's own table (the realised
    true answers of these 1,000 residents) varies less, as it leaves out the sampling of
    residents; it is a control, covered conservatively (about 97%), as a count's
    interval covers its own sample's count."""
    for k in (3, 5):
        rng = np.random.default_rng(29_000 + k)
        population = change_truth(k) / change_truth(k).sum()
        hits: dict[tuple[str, str], list[bool]] = {}
        for _ in range(SURVEYS):
            truth, result = _change_survey(k, CHANGE_PAIRED, rng)
            for target, table_truth in (
                ("population shares", population),
                ("sample's own table", truth / CHANGE_PAIRED),
            ):
                net = table_truth.sum(axis=0) - table_truth.sum(axis=1)
                low, high = result.net_change_ci95[:, 0], result.net_change_ci95[:, 1]
                hits.setdefault(("net_change", target), []).extend((low <= net) & (net <= high))
                cells = result.transitions_ci95[np.arange(k), np.arange(k)] / CHANGE_PAIRED
                diagonal = np.diag(table_truth)
                hits.setdefault(("diagonal cells", target), []).extend(
                    (cells[:, 0] <= diagonal) & (diagonal <= cells[:, 1])
                )
        for (name, target), covered in hits.items():
            share = 100.0 * float(np.mean(covered))
            control = target != "population shares"
            table.add(
                f"change k={k}: {name} vs {target}, {CHANGE_PAIRED:,} paired, RR 0.7, "
                f"{SURVEYS} consultations ({len(covered)} intervals)",
                share / 100.0,
                unit="%",
                baseline_name="none (new kind, issue 29)",
                target="control (conservative)" if control else f"within [{LOW:g}, {HIGH:g}]%",
                ok=None if control else LOW <= share <= HIGH,
            )
    table.note(
        "change coverage: intervals pooled over categories (k per consultation). The "
        "estimand is the population's transition shares (the participant bootstrap redraws "
        "residents; docs/analysts/change.md), so the target applies to the population "
        "rows; the sample's own table is covered conservatively (a control)."
    )


def change_bias(table: Table) -> None:
    """Issue 29: bias below 0.5 points at 10^5 paired residents: mean error of the net
    change and of the diagonal shares over 100 populations and distortions, k = 3 and 5
    (the mean of 100 errors has a standard error near 0.05-0.1 points)."""
    n, seeds = 100_000, 100
    for k in (3, 5):
        rng = np.random.default_rng(2900 + k)
        errors = []
        for _ in range(seeds):
            truth, result = _change_survey(k, n, rng, ci=False)
            net = truth.sum(axis=0) / n - truth.sum(axis=1) / n
            errors.append(
                np.concatenate(
                    [result.net_change - net, (np.diag(result.transitions) - np.diag(truth)) / n]
                )
            )
        bias = 100.0 * np.abs(np.mean(errors, axis=0))
        error = 100.0 * np.std(errors, axis=0, ddof=1) / math.sqrt(seeds)
        table.note(f"change k={k} bias: standard error of each mean up to {error.max():.2f} points")
        table.add(
            f"change k={k}: largest |bias| of net_change and diagonal shares, n=10^5, "
            f"{seeds} seeds",
            float(bias.max()),
            unit="points",
            baseline_name="none (new kind, issue 29)",
            target="< 0.5 points",
            ok=float(bias.max()) < 0.5,
        )


PARTS = {
    "speed": speed,
    "never_reported": never_reported,
    "bias": bias,
    "coverage_em": coverage_em,
    "coverage_joint30k": coverage_joint30k,
    "coverage_joint30k_real": coverage_joint30k_real,
    "coverage_joint30k_step": coverage_joint30k_step,
    "coverage_joint1k": coverage_joint1k,
    "coverage_mean": coverage_mean,
    "grid": grid,
    "change_coverage": change_coverage,
    "change_bias": change_bias,
}


def main(argv: list[str]) -> int:
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__)
        return 0
    chosen = argv or list(PARTS)
    unknown = [name for name in chosen if name not in PARTS]
    if unknown:
        print(f"unknown parts {unknown}; choose from {list(PARTS)}", file=sys.stderr)
        return 2
    change_only = all(name.startswith("change") for name in chosen)
    title = (
        "How opinions changed (issue 29)"
        if change_only
        else "Accuracy on realistic data (issue 10)"
    )
    table = Table(title)
    for name in chosen:
        PARTS[name](table)
        print(f"done: {name}", flush=True)
    if change_only:  # its own results file (the other parts' figures stay as they are)
        table.print()
        write_results([table], name="bench_accuracy_change")
        return 1 if table.missed else 0
    return finish_all([table])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
