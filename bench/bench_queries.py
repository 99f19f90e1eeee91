"""Benchmarks of conjunctive counts and conditional means over distorted candidate pools.

Run from the repository root: ``python bench/bench_queries.py`` (add ``--quick`` for fewer
repetitions). Every figure is measured in this run and printed beside its baselines, also
measured in this run (the naive count of distorted values, and 001's Figure 3 procedure).
Exits 1 if a speed target is missed; the accuracy tables are informative.

Setting (001_28af1923c784b480.txt, Table II): randomised response with retain 0.75 on
sex, district and children, uniform noise on [-10, 10] years on age, Gaussian noise
(sigma 800) on income; pools from reconstruction.algorithms.simulation (correlated
attributes, known truth).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Table, finish_all, median_time
from privacy.mechanisms import distort_codes, manual_negative
from reconstruction.algorithms import nstops_mle, reported_counts
from reconstruction.algorithms.queries import (
    Condition,
    count,
    count_joint,
    mean,
    satisfies,
)
from reconstruction.algorithms.simulation import distort_pool, simulate_candidates

WHERE = [
    Condition("sex", "in", {0}),
    Condition("district", "in", {0, 1}),
    Condition("age", "gt", 30),
]


SPEED_TARGET_SECONDS = 1.0


def bench_speed() -> Table:
    rng = np.random.default_rng(1)
    pool = simulate_candidates(1_000_000, rng=rng)
    table = distort_pool(pool, rng=rng)
    results = Table(
        "Speed: sex=F and district in {N,S} and age > 30, 10^6 candidates "
        "(median of 3 runs after a warm-up)"
    )
    naive = median_time(lambda: count(table, WHERE, method="naive", ci=False), repeat=3)
    rows = [
        ("joint (point estimate)", lambda: count(table, WHERE, method="joint", ci=False)),
        ("figure3 (point estimate)", lambda: count(table, WHERE, method="figure3", ci=False)),
        ("joint + 95% CI (200 bootstrap)", lambda: count(table, WHERE, n_boot=200, rng=rng)),
    ]
    for label, call in rows:
        seconds = median_time(call, repeat=3)
        results.add(
            label,
            seconds,
            unit="s",
            baseline=naive,
            baseline_name="naive count",
            target=f"< {SPEED_TARGET_SECONDS:g} s",
            ok=seconds < SPEED_TARGET_SECONDS,
        )
    per = median_time(
        lambda: count(table, WHERE, method="figure3", n_boot=10, rng=rng), repeat=1, warmup=0
    )
    results.add(
        "figure3 + 95% CI (10 bootstrap), one run",
        per,
        unit="s",
        baseline=naive,
        baseline_name="naive count",
    )
    results.note(f"figure3 bootstrap: about {per / 11:.2f} s per replicate")
    results.print()
    return results


def bench_accuracy(repetitions: int, sizes: list[int]) -> None:
    methods: list[tuple[str, Callable[..., float]]] = [
        ("joint", lambda t, r: count(t, WHERE, ci=False, rng=r).estimate),
        (
            "joint@thr",
            lambda t, r: count_joint(t, WHERE, resolution="thresholds", ci=False).estimate,
        ),
        ("figure3", lambda t, r: count(t, WHERE, method="figure3", ci=False, rng=r).estimate),
        ("naive", lambda t, r: count(t, WHERE, method="naive", ci=False).estimate),
    ]
    print(
        f"\n## Accuracy of the count, {repetitions} repetitions per size "
        "(relative RMSE, relative bias in brackets)"
    )
    print(
        "joint = default (fine intervals); joint@thr = only the threshold cuts; "
        "baselines: figure3 (001, Figure 3) and naive"
    )
    header = f"{'n':>9}{'true share':>12}" + "".join(f"{name:>20}" for name, _ in methods)
    print(header)
    for n in sizes:
        errors: dict[str, list[float]] = {name: [] for name, _ in methods}
        shares = []
        for rep in range(repetitions):
            rng = np.random.default_rng(10_000 * n + rep)
            pool = simulate_candidates(n, rng=rng)
            table = distort_pool(pool, rng=rng)
            truth = float(satisfies(pool.as_mapping(), WHERE).sum())
            shares.append(truth / n)
            for name, method in methods:
                errors[name].append((method(table, rng) - truth) / truth)
        cells = ""
        for name, _ in methods:
            e = np.asarray(errors[name])
            cells += f"{np.sqrt(np.mean(e * e)):>11.2%} ({np.mean(e):+.2%})"
        print(f"{n:>9}{np.mean(shares):>12.3f}{cells}")


def bench_means(repetitions: int, sizes: list[int]) -> None:
    queries = {
        "children=Y": [Condition("children", "in", {1})],
        "children=Y & sex=F": [Condition("children", "in", {1}), Condition("sex", "in", {0})],
        "age<=30": [Condition("age", "lte", 30)],
        "age>30 & children=Y": [Condition("age", "gt", 30), Condition("children", "in", {1})],
        "age in [18,40)": [Condition("age", "between", (18, 40))],
    }
    print(
        f"\n## Mean income under a distorted condition, {repetitions} repetitions "
        "(relative bias, relative RMSE; coverage of the 95% CI)"
    )
    print(
        f"{'n':>8}  {'condition':<22}{'unbiased (default)':>30}{'figure3 (001 IV-A2)':>30}"
        f"{'naive':>30}{'s/unbiased':>12}"
    )
    for n in sizes:
        for label, where in queries.items():
            stats: dict[str, list[tuple[float, bool]]] = {
                m: [] for m in ("unbiased", "figure3", "naive")
            }
            seconds = []
            for rep in range(repetitions):
                rng = np.random.default_rng(7_000 * n + rep)
                pool = simulate_candidates(n, rng=rng)
                table = distort_pool(pool, rng=rng)
                truth = float(pool.income[satisfies(pool.as_mapping(), where)].mean())
                for method in stats:
                    start = time.perf_counter()
                    result = mean(table, "income", where, method=method, rng=rng)  # type: ignore[arg-type]
                    if method == "unbiased":
                        seconds.append(time.perf_counter() - start)
                    covered = result.ci95[0] <= truth <= result.ci95[1]
                    stats[method].append(((result.estimate - truth) / truth, covered))
            cells = ""
            for method in stats:
                e = np.array([s[0] for s in stats[method]])
                cover = np.mean([s[1] for s in stats[method]])
                cells += f"{np.mean(e):>+10.2%} {np.sqrt(np.mean(e * e)):>8.2%} {cover:>8.0%}  "
            print(f"{n:>8}  {label:<22}{cells}{np.median(seconds):>10.2f}")


def bench_calibration(repetitions: int) -> None:
    """Coverage of NStoPS-MLE intervals when Q is estimated from 100 pairs per row."""
    rng = np.random.default_rng(31)
    truth = np.array([0.4, 0.3, 0.2, 0.1])
    manual = np.array(
        [[0, 0.15, 0.45, 0.40], [0.10, 0, 0.35, 0.55], [0.2, 0.3, 0, 0.5], [0.3, 0.5, 0.2, 0]]
    )
    hits = {"Q taken as known": np.zeros(4), "calibration_pairs": np.zeros(4)}
    seconds = {name: 0.0 for name in hits}
    for _ in range(repetitions):
        codes = rng.choice(4, 2_000, p=truth)
        counts = reported_counts(distort_codes(codes, manual, rng), 4)
        calibration_true = np.repeat(np.arange(4), 100)
        pairs = np.stack([calibration_true, distort_codes(calibration_true, manual, rng)], 1)
        channel = manual_negative(4, pairs)
        true_counts = np.bincount(codes, minlength=4)
        for name in hits:
            extra = {"calibration_pairs": pairs} if name == "calibration_pairs" else {}
            start = time.perf_counter()
            result = nstops_mle(counts, channel, tol=1e-9, rng=rng, **extra)  # type: ignore[arg-type]
            seconds[name] += time.perf_counter() - start
            hits[name] += (result.ci95[:, 0] <= true_counts) & (true_counts <= result.ci95[:, 1])
    print(
        f"\n## NStoPS-MLE 95% interval coverage, n=2000, Q from 4 x 100 pairs, "
        f"{repetitions} surveys"
    )
    for name, hit in hits.items():
        coverage = " ".join(f"{c:.2f}" for c in hit / repetitions)
        print(f"{name:<20} coverage per category {coverage}   {seconds[name] / repetitions:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    args = parser.parse_args()
    repetitions = 5 if args.quick else 20
    speed = bench_speed()
    sizes = [10_000, 30_000] if args.quick else [10_000, 30_000, 100_000, 1_000_000]
    bench_accuracy(repetitions, sizes)
    bench_means(repetitions, [30_000] if args.quick else [30_000, 100_000])
    bench_calibration(50 if args.quick else 200)
    return finish_all([speed], printed=True)


if __name__ == "__main__":
    sys.exit(main())
