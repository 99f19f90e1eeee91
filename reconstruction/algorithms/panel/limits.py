"""Work limits and the wall-clock safety net of panel selection.

Pure module: the standard library and scipy's result type only.

The deterministic limits (branch-and-bound nodes per MILP, pricing rounds per request)
make a lottery, and the panel a seed draws from it, a function of the data, the request
and the seed alone; ``max_seconds`` is the safety net read through :func:`now`. The
panel modules read these names through this module (``limits.DECIDE_NODES``), so a test
can lower a limit or replace the clock in one place.
"""

from __future__ import annotations

import re
import time

from scipy.optimize import OptimizeResult

# Deterministic work limits (HiGHS run single-threaded, as scipy runs it, is deterministic
# for given options, so a run stopped by these is a function of the data, the request and
# the seed; a wall-clock limit is not: where it stops depends on the machine's load).
# Branch-and-bound nodes an exact pricing MILP may explore; its dual bound then still
# bounds the optimum.
PRICING_NODES = 2_000


# Nodes a feasibility MILP (whether the quotas admit a panel; each test of the refusal's
# conflict search; the tightened-bands search) and the relaxation MILP may explore.
DECIDE_NODES = 20_000


# Rounds per request: the covering step's panels and the column generation's pricing
# problems (MILP or "LP and fix"; every objective, LEXIMIN's programmes share them).
# Chosen on bench/bench_panel.py's pools of 1,000 / panel 30 so that a panel stays within
# its 10 s target on this 2-core machine (README, "What panels achieve").
MAX_ROUNDS = 16


# Seconds a feasibility MILP may always take, even past max_seconds: whether the quotas
# admit a panel at all is asked once per request, and a small problem answers in
# milliseconds; past the deadline, the diagnosis and the tightening ask nothing more.
DECIDE_FLOOR = 1.0

_HIGHS_STATUS = re.compile(r"HiGHS Status (\d+)")


# HiGHS model statuses of a run stopped by a limit: time (13), iterations (14), and the
# node limit (``mip_max_nodes``), which HiGHS reports as its solution limit (16); scipy
# maps the first two to status 1 and the last to status 4, "not recognized".
_LIMIT_STATUSES = frozenset({13, 14, 16})


def limit_reached(result: OptimizeResult) -> bool:
    """Whether a :func:`scipy.optimize.milp` run stopped at a node, time or iteration
    limit (rather than failing)."""
    if result.status == 1:
        return True
    found = _HIGHS_STATUS.search(str(result.message))
    return result.status == 4 and found is not None and int(found.group(1)) in _LIMIT_STATUSES


def now() -> float:
    """The clock of the safety net (``time.monotonic()``)."""
    return time.monotonic()
