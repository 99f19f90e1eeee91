"""Benchmarks of the reconstruction engine (run: python bench/bench_engine.py).

Targets (issue 3):
* 10^7 reported codes (k = 10) to the em_as estimate, counting included: at most 1.5x one
  numpy.bincount over the same codes, and at least 20x faster than multi_freq_ldpy's
  GRR_Aggregator_IBU on the same reports;
* a 95% bootstrap interval for k <= 20: under 100 ms.

Every figure is the median of REPEAT timed runs after one untimed warm-up
(bench/common.py), ours and multi_freq_ldpy's alike. multi-freq-ldpy is a pinned dev
dependency (requirements-dev.txt); if it is not importable the benchmark fails.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import Table, median_time
from privacy.mechanisms import distort_codes, randomised_response
from reconstruction.algorithms import em_as, reported_counts
from reconstruction.algorithms.discrete import nstops_ii

N_CODES = 10**7
K = 10
EPSILON = 2.0
REPEAT = 3


def timed(function) -> float:  # type: ignore[no-untyped-def]
    return median_time(function, repeat=REPEAT, warmup=1)


def main() -> int:
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_IBU

    rng = np.random.default_rng(0)
    retain = math.exp(EPSILON) / (math.exp(EPSILON) + K - 1)  # GRR with epsilon = 2
    channel = randomised_response(K, retain)
    truth = rng.dirichlet(np.ones(K))
    codes = rng.choice(K, N_CODES, p=truth)
    reports = distort_codes(codes, channel, rng).astype(np.int64)

    bincount = timed(lambda: np.bincount(reports, minlength=K))
    estimate = timed(lambda: em_as(reported_counts(reports, K), channel, ci=False))
    with_ci = timed(lambda: em_as(reported_counts(reports, K), channel))
    ibu_seconds = timed(lambda: GRR_Aggregator_IBU(reports, K, EPSILON))
    result = em_as(reported_counts(reports, K), channel, ci=False)
    ibu = GRR_Aggregator_IBU(reports, K, EPSILON)

    table = Table(
        f"Reconstruction engine: 10^7 codes, k={K}, GRR epsilon={EPSILON} "
        f"(median of {REPEAT} runs after a warm-up, every figure)"
    )
    table.add(
        "10^7 codes -> em_as estimate (ci=False)",
        estimate,
        unit="s",
        baseline=bincount,
        baseline_name="np.bincount of the codes",
        target="<= 1.5x baseline",
        ok=estimate <= 1.5 * bincount,
    )
    table.add(
        "10^7 codes -> em_as estimate (ci=False), vs IBU",
        estimate,
        unit="s",
        baseline=ibu_seconds,
        baseline_name="multi_freq_ldpy GRR_Aggregator_IBU",
        target="<= 0.05x baseline",
        ok=estimate <= 0.05 * ibu_seconds,
    )
    table.add(
        "10^7 codes -> em_as estimate + bootstrap ci",
        with_ci,
        unit="s",
        baseline=bincount,
        baseline_name="np.bincount of the codes",
    )
    for k in (5, 10, 20):
        counts = rng.multinomial(2000, rng.dirichlet(np.ones(k)) @ randomised_response(k, 0.5))
        channel_k = randomised_response(k, 0.5)
        em_alone = timed(lambda c=counts, ch=channel_k: em_as(c, ch, ci=False))
        total = timed(lambda c=counts, ch=channel_k: em_as(c, ch))
        table.add(
            f"em_as 95% bootstrap interval, k={k} (with - without ci)",
            total - em_alone,
            unit="s",
            target="< 100 ms",
            ok=total - em_alone < 0.1,
        )
    negative = rng.multinomial(2000, np.full(20, 1 / 20))
    ii_alone = timed(lambda: nstops_ii(negative, ci=False))
    ii_total = timed(lambda: nstops_ii(negative))
    table.add(
        "nstops_ii 95% bootstrap interval, k=20 (with - without ci)",
        ii_total - ii_alone,
        unit="s",
        target="< 100 ms",
        ok=ii_total - ii_alone < 0.1,
    )
    table.add("em_as iterations", int(result.iterations))
    table.add("max |em_as - truth|", float(np.max(np.abs(result.proportions - truth))))
    table.add("max |em_as - IBU|", float(np.max(np.abs(result.proportions - ibu))))
    table.note(f"speed-up over GRR_Aggregator_IBU: {ibu_seconds / estimate:.0f}x")
    return table.finish()


if __name__ == "__main__":
    sys.exit(main())
