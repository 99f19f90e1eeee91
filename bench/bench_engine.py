"""Benchmarks of the reconstruction engine (run: python bench/bench_engine.py).

Targets (issue 3):
* 10^7 reported codes (k = 10) to the em_as estimate, counting included: at most 1.5x one
  numpy.bincount over the same codes, and at least 20x faster than multi_freq_ldpy's
  GRR_Aggregator_IBU on the same reports;
* a 95% bootstrap interval for k <= 20: under 100 ms.

multi_freq_ldpy is optional: if it is not importable the comparison is skipped with a hint
(``bench/run`` builds ``.bench-venv`` with it).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from privacy.mechanisms import distort_codes, randomised_response
from reconstruction.algorithms import em_as, reported_counts
from reconstruction.algorithms.discrete import nstops_ii

N_CODES = 10**7
K = 10
EPSILON = 2.0


def best_of(function: Callable[[], object], repeat: int = 5) -> float:
    """Best wall-clock time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def row(name: str, seconds: float, baseline_name: str, baseline: float, target: str) -> str:
    ratio = seconds / baseline
    return (
        f"| {name:<44} | {seconds * 1e3:>10.1f} | {baseline_name:<30} | "
        f"{baseline * 1e3:>10.1f} | {ratio:>8.3f}x | {target:<14} |"
    )


def main() -> None:
    rng = np.random.default_rng(0)
    retain = math.exp(EPSILON) / (math.exp(EPSILON) + K - 1)  # GRR with epsilon = 2
    channel = randomised_response(K, retain)
    truth = rng.dirichlet(np.ones(K))
    codes = rng.choice(K, N_CODES, p=truth)
    reports = distort_codes(codes, channel, rng).astype(np.int64)

    bincount = best_of(lambda: np.bincount(reports, minlength=K))
    estimate = best_of(lambda: em_as(reported_counts(reports, K), channel, ci=False))
    with_ci = best_of(lambda: em_as(reported_counts(reports, K), channel))
    result = em_as(reported_counts(reports, K), channel, ci=False)

    lines = [
        f"em_as iterations: {result.iterations}, max |p_hat - p| = "
        f"{np.max(np.abs(result.proportions - truth)):.2e}",
        "",
        f"| {'measurement':<44} | {'ms':>10} | {'baseline':<30} | {'ms':>10} | "
        f"{'ratio':>9} | {'target':<14} |",
        f"|{'-' * 46}|{'-' * 12}|{'-' * 32}|{'-' * 12}|{'-' * 11}|{'-' * 16}|",
        row(
            "10^7 codes -> em_as estimate (ci=False)",
            estimate,
            "np.bincount(10^7 codes)",
            bincount,
            "<= 1.5x",
        ),
        row(
            "10^7 codes -> em_as estimate + bootstrap ci",
            with_ci,
            "np.bincount(10^7 codes)",
            bincount,
            "(informative)",
        ),
    ]
    for k in (5, 10, 20):
        counts = rng.multinomial(2000, rng.dirichlet(np.ones(k)) @ randomised_response(k, 0.5))
        channel_k = randomised_response(k, 0.5)
        em_alone = best_of(lambda c=counts, ch=channel_k: em_as(c, ch, ci=False))
        total = best_of(lambda c=counts, ch=channel_k: em_as(c, ch))
        lines.append(
            row(
                f"em_as 95% bootstrap interval, k={k}",
                total - em_alone,
                "100 ms budget",
                0.1,
                "< 100 ms",
            )
        )
    negative = rng.multinomial(2000, np.full(20, 1 / 20))
    ii_alone = best_of(lambda: nstops_ii(negative, ci=False))
    ii_total = best_of(lambda: nstops_ii(negative))
    lines.append(
        row(
            "nstops_ii 95% bootstrap interval, k=20",
            ii_total - ii_alone,
            "100 ms budget",
            0.1,
            "< 100 ms",
        )
    )

    try:
        from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_IBU
    except ImportError:
        lines.append("")
        lines.append(
            "multi_freq_ldpy is not importable: run `bench/run` (it builds .bench-venv "
            "with the project requirements and multi-freq-ldpy)."
        )
    else:
        start = time.perf_counter()
        ibu = GRR_Aggregator_IBU(reports, K, EPSILON)
        ibu_seconds = time.perf_counter() - start
        lines.append(
            row(
                "10^7 codes -> em_as estimate (ci=False)",
                estimate,
                "GRR_Aggregator_IBU (one run)",
                ibu_seconds,
                "<= 0.05x",
            )
        )
        lines.append(
            f"speed-up over GRR_Aggregator_IBU: {ibu_seconds / estimate:.0f}x; "
            f"max |em_as - IBU| = {np.max(np.abs(result.proportions - ibu)):.1e}"
        )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
