"""The two-machine shape on one machine: ingest on the primary, analyses on a hot standby.

    .venv/bin/python bench/bench_standby.py          (run it under /work/bin/heavy)

Starts a durable PostgreSQL primary, a streaming hot standby of it (``pg_basebackup -R``,
tests/servers.py), Redis, the web app under gunicorn on the primary, and two Celery
workers reading the standby (``DATABASE_REPLICA_URL``): one on the ``analyses`` lane and
one on the ``reports`` lane. Then it measures (docs/operators/scaling.md, issue 30):

1. the ingest rate (bulk API, 2 clients) on the primary alone, and while a stream of
   count and sample analyses runs on the standby (target: at least 80% of the alone rate);
2. a count analysis's end-to-end latency (POST to finished, read-your-writes wait
   included) alone, and while a burst of reports runs in its own lane (target: p95 grows
   by at most 20%).

Both clusters, both workers and the web server share this machine's CPUs, so the figures
are what one machine shows; on two machines the standby's work leaves the primary's CPUs
alone. The table goes to bench/results/bench_standby.md with date, machine and load
(bench/common.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_api import _start_gunicorn  # noqa: E402
from bench.bench_scale import _post, _prepare, _wait, free_port, ingest  # noqa: E402
from bench.common import Table, finish_all  # noqa: E402

INGEST_RATIO_TARGET = 0.80
P95_GROWTH_TARGET = 0.20
COUNT = {
    "kind": "count",
    "where": [
        {"attribute": "district", "op": "in", "value": ["N"]},
        {"attribute": "age", "op": "gt", "value": 40},
    ],
}
SAMPLE = {"kind": "sample", "size": 20, "where": [{"attribute": "district", "op": "in",
                                                   "value": ["N"]}]}  # fmt: skip


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def end_to_end(conn: http.client.HTTPConnection, key: str, body: dict[str, Any]) -> float:
    """POST an analysis and wait for it: seconds from the POST to its end. A refusal by
    query auditing (counts of a condition while residents arrive may differ by a small
    group) ends the job after the same fit, so it counts too; a failure is an error."""
    began = time.perf_counter()
    status, created = _post(conn, "/api/v1/analyses/", json.dumps(body).encode(), key)
    if status != 202:
        raise RuntimeError(f"analysis refused: {status} {created}")
    job = _wait(conn, created["url"], key)
    elapsed = time.perf_counter() - began
    if job["status"] not in ("succeeded", "refused"):
        raise RuntimeError(f"analysis {body['kind']} ended {job['status']}: {job['error']}")
    OUTCOMES[job["status"]] = OUTCOMES.get(job["status"], 0) + 1
    return elapsed


OUTCOMES: dict[str, int] = {}


def _analysis_stream(port: int, survey: int, key: str, stop: threading.Event) -> list[float]:
    """Count and sample analyses one after another until ``stop``; their latencies."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    latencies: list[float] = []
    bodies = [{**COUNT, "survey": survey}, {**SAMPLE, "survey": survey}]
    while not stop.is_set():
        latencies.append(end_to_end(conn, key, bodies[len(latencies) % 2]))
    return latencies


def _counts(port: int, survey: int, key: str, n: int) -> list[float]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    return [end_to_end(conn, key, {**COUNT, "survey": survey}) for _ in range(n)]


def _reports(port: int, survey: int, key: str, n: int) -> list[str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    urls = []
    for _ in range(n):
        status, created = _post(conn, f"/api/v1/surveys/{survey}/reports/", b"{}", key)
        if status != 202:
            raise RuntimeError(f"report refused: {status} {created}")
        urls.append(created["url"])
    return urls


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed-residents", type=int, default=40_000)
    parser.add_argument("--ingest", type=int, default=60_000, help="residents per ingest phase")
    parser.add_argument("--counts", type=int, default=20, help="counts per latency phase")
    parser.add_argument("--reports", type=int, default=4, help="reports in the burst")
    parser.add_argument("--no-fail", action="store_true")
    args = parser.parse_args(argv)

    from tests.servers import running_services, start_worker

    started = datetime.now(UTC)
    load_before = _load()
    with running_services(durable=True, standby=True) as env:
        env = {
            **env,
            "SUBMISSION_RATE_LIMIT": "100000000/minute",
            "ANALYSIS_RATE_LIMIT": "100000/minute",
            "REPORT_RATE_LIMIT": "100000/minute",
            "JOBS_MAX_ACTIVE_PER_ORGANISATION": "1000",
        }
        survey, _portal, analyst, scheme = _prepare(env)  # bulks of 10,000: an analyst key
        workdir = Path(env["INTEGRATION_WORKDIR"])
        standby = {**env, "DATABASE_REPLICA_URL": env["STANDBY_READER_URL"]}
        port = free_port()
        server = _start_gunicorn(env, port, 2, 4, workdir / "gunicorn.log")
        workers = [
            start_worker(workdir, name="analyses", queues=("analyses",), extra_env=standby),
            start_worker(workdir, name="reports", queues=("reports",), extra_env=standby),
        ]
        try:
            first = args.seed_residents
            ingest(port, survey, analyst, scheme, 0, first, seed=1)
            # Warm both paths once (imports, the standby's caches).
            _counts(port, survey, analyst, 2)

            # 1. Ingest alone, then with analyses streaming on the standby.
            alone, _ = ingest(port, survey, analyst, scheme, first, first + args.ingest, seed=2)
            stop = threading.Event()
            streamed: list[float] = []
            stream = threading.Thread(
                target=lambda: streamed.extend(_analysis_stream(port, survey, analyst, stop))
            )
            stream.start()
            time.sleep(1.0)  # the stream is under way before the clock starts
            begin = first + args.ingest
            shared, _ = ingest(port, survey, analyst, scheme, begin, begin + args.ingest, seed=3)
            stop.set()
            stream.join()
            print(f"ingest alone {alone:,.0f}/s, with analyses {shared:,.0f}/s "
                  f"({len(streamed)} analyses meanwhile)", flush=True)  # fmt: skip

            # 2. Count latency alone, then behind a burst of reports in their lane.
            quiet = _counts(port, survey, analyst, args.counts)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            urls = _reports(port, survey, analyst, args.reports)
            time.sleep(0.5)  # the reports lane has started on them
            burst = _counts(port, survey, analyst, args.counts)
            reports_done = [_wait(conn, url, analyst)["status"] for url in urls]
            print(f"count p95 alone {_p95(quiet):.3f} s, with reports {_p95(burst):.3f} s; "
                  f"reports {reports_done}", flush=True)  # fmt: skip
        finally:
            for worker in workers:
                worker.stop()
            server.terminate()
            server.wait(timeout=60)
    load_after = _load()

    ratio = shared / alone
    growth = _p95(burst) / _p95(quiet) - 1
    table = Table(
        f"bench_standby: primary + hot standby on one machine ({started:%Y-%m-%d %H:%M} UTC, "
        f"load {load_before} -> {load_after})"
    )
    table.add("ingest, primary alone", alone, unit="responses/s")
    table.add("ingest, analyses streaming on the standby", shared, unit="responses/s",
              baseline=alone, baseline_name="primary alone",
              target=f">= {INGEST_RATIO_TARGET:.0%} of alone ({ratio:.0%})",
              ok=ratio >= INGEST_RATIO_TARGET)  # fmt: skip
    table.add("analyses run on the standby meanwhile", len(streamed))
    table.add("count p95, alone", _p95(quiet), unit="s")
    table.add("count p95, reports burst in their lane", _p95(burst), unit="s",
              baseline=_p95(quiet), baseline_name="count p95 alone",
              target=f"<= +{P95_GROWTH_TARGET:.0%} ({growth:+.0%})",
              ok=growth <= P95_GROWTH_TARGET)  # fmt: skip
    table.add(
        "count median, alone / with reports",
        f"{statistics.median(quiet):.3f} / {statistics.median(burst):.3f} s",
    )
    table.add(
        "analyses succeeded / refused by query auditing",
        f"{OUTCOMES.get('succeeded', 0)} / {OUTCOMES.get('refused', 0)}",
    )
    table.notes.append(
        f"Set-up: {args.seed_residents:,} residents first (7 questions), {args.ingest:,} per "
        "ingest phase (bulk API, analyst key, 2 clients, gunicorn 2 x 4 on the primary); a "
        "worker on the analyses lane and one on the reports lane, both reading the standby "
        f"(DATABASE_REPLICA_URL); {args.counts} counts per latency phase, a burst of "
        f"{args.reports} reports. Primary, standby, Redis, web and workers share this "
        "machine's CPUs: on two machines the standby's work would not take the primary's."
    )
    status = finish_all([table])
    return 0 if args.no_fail else status


if __name__ == "__main__":
    sys.exit(main())
