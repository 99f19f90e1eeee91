"""Benchmark of the submission API over real HTTP: gunicorn on loopback, PostgreSQL.

    DJANGO_DEBUG=1 .venv/bin/python bench/bench_api.py [--bulk-batches 10] [--singles 4000]

1. Bulk: batches of 10,000 responses with 7 answers each, POSTed one after the other to
   ``/surveys/{id}/responses/bulk/``; target >= 5,000 responses per second end to end
   (request bodies are encoded before the clock starts; the server parses, validates
   and stores them within the timed window).
2. Single: 16 concurrent keep-alive clients POST one response each, back to back, to
   ``/surveys/{id}/responses/``; target p95 < 50 ms.

PostgreSQL and Redis come from tests/servers.py (durable PostgreSQL: fsync on, as in
production). Prints a table with the target beside each figure; exits 1 if a target is
missed (``--no-fail`` to always exit 0).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.common import Table  # noqa: E402

BULK_TARGET = 5_000.0  # responses per second
P95_TARGET_MS = 50.0
CLIENTS = 16


def _answers(i: int) -> dict[str, object]:
    return {
        "sex": "FM"[i % 2],
        "district": "NSEWC"[i % 5],
        "satisfaction": "12345"[i % 5],
        "site": "ABCDEFG"[i % 7],
        "skips_class": ("never", "rarely", "often", "always")[i % 4],
        "age": 16.0 + (i * 7919) % 8400 / 100.0,
        "income": float((i * 104729) % 20000),
    }


def _setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    import django

    django.setup()


def budgeted_questions() -> list[dict[str, object]]:
    """The seven questions under mechanisms with a bounded ε (issue 28: only those open in a
    consultation with a privacy budget): randomised response and Laplace noise on the
    reporting grid, same keys and categories, so the same answers fit."""
    from tests.factories import seven_questions

    questions = seven_questions()
    for question in questions:
        if question["type"] == "continuous":
            width = question["range"][1] - question["range"][0]
            question["mechanism"] = {"name": "additive_laplace", "scale": width / 8}
        else:
            question["mechanism"] = {"name": "randomised_response", "retain": 0.7}
    return questions


def _prepare(env: dict[str, str], budget: float | None = None) -> tuple[int, str, int | None]:
    """Migrate, then create an organisation, a portal key and an open 7-question survey;
    with ``budget``, a second one in a consultation with that privacy budget."""
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--verbosity", "0"],
        cwd=REPO,
        env={**os.environ, **env},
        check=True,
    )
    _setup_django(env)
    from consultations.services import api_key_create, consultation_create, organisation_create
    from surveys.services import survey_create, survey_open
    from tests.factories import seven_questions

    organisation = organisation_create(slug="bench", name="Benchmark")
    # Bulks of 10,000 need a server-side key (a portal key may send 100 per call).
    key = api_key_create(organisation=organisation, role="analyst", name="bench").key
    consultation = consultation_create(organisation=organisation, title="Benchmark")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="profile",
        title="Benchmark",
        questions=seven_questions(),
        actor="bench",
    )
    survey_open(survey=survey, actor="bench")
    budgeted = None
    if budget is not None:
        capped = consultation_create(
            organisation=organisation, title="Benchmark, budgeted", privacy_budget=budget
        )
        budgeted = survey_create(
            organisation=organisation,
            consultation=capped,
            kind="profile",
            title="Benchmark, budgeted",
            questions=budgeted_questions(),
            actor="bench",
        )
        budgeted = survey_open(survey=budgeted, actor="bench").pk
    from django.db import connections

    connections.close_all()
    return survey.pk, key, budgeted


def _start_gunicorn(env: dict[str, str], port: int, workers: int, threads: int, log: Path):
    # The production configuration (config/gunicorn.py), sized by its environment variables.
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "-c",
        "config/gunicorn.py",
        "config.wsgi:application",
        "--error-logfile",
        str(log),
        "--log-level",
        "warning",
    ]
    sizing = {
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": str(workers),
        "GUNICORN_THREADS": str(threads),
    }
    process = subprocess.Popen(
        command,
        cwd=REPO,
        env={
            **os.environ,
            **env,
            **sizing,
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "bench-" + "x" * 50,
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        },
        stdout=subprocess.DEVNULL,
        stderr=open(log, "ab"),  # noqa: SIM115  (the server process owns it)
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            return process
        except OSError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"gunicorn did not start:\n{log.read_text() if log.exists() else ''}")


def _post(conn: http.client.HTTPConnection, path: str, body: bytes, key: str) -> tuple[int, bytes]:
    conn.request(
        "POST",
        path,
        body=body,
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    response = conn.getresponse()
    return response.status, response.read()


def bench_bulk(port: int, survey: int, key: str, batches: int, size: int) -> dict[str, float]:
    bodies = [
        json.dumps(
            {
                "responses": [
                    {"participant": f"b{b}-{i}", "answers": _answers(b * size + i)}
                    for i in range(size)
                ]
            }
        ).encode()
        for b in range(batches)
    ]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    # Warm-up: one small batch (imports, connection, cached answer rules).
    _post(
        conn,
        f"/api/v1/surveys/{survey}/responses/bulk/",
        json.dumps({"responses": [{"participant": "warm-0", "answers": _answers(0)}]}).encode(),
        key,
    )
    durations = []
    start = time.perf_counter()
    for body in bodies:
        t0 = time.perf_counter()
        status, content = _post(conn, f"/api/v1/surveys/{survey}/responses/bulk/", body, key)
        durations.append(time.perf_counter() - t0)
        if status != 201:
            raise RuntimeError(f"bulk batch failed: {status} {content[:500]!r}")
    elapsed = time.perf_counter() - start
    return {
        "responses": batches * size,
        "seconds": elapsed,
        "rate": batches * size / elapsed,
        "batch_median_s": statistics.median(durations),
        "body_mb": len(bodies[0]) / 1e6,
    }


def _descendants(root: int) -> list[int]:
    """``root`` and every process below it (from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    parents[int(entry)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
    found, frontier = [root], [root]
    while frontier:
        frontier = [pid for pid, parent in parents.items() if parent in frontier]
        found += frontier
    return found


def _cpu_seconds(roots: list[int]) -> float:
    """User + system CPU time of the process trees under ``roots`` (live processes)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for root in roots:
        for pid in _descendants(root):
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])
            except OSError:
                continue
    return total / ticks


def bench_single(port: int, survey: int, key: str, per_client: int) -> dict[str, float]:
    latencies: list[float] = []
    failures: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(CLIENTS)

    def client(number: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        bodies = [
            json.dumps({"participant": f"s{number}-{i}", "answers": _answers(i)}).encode()
            for i in range(per_client)
        ]
        mine: list[float] = []
        barrier.wait()
        for body in bodies:
            t0 = time.perf_counter()
            status, content = _post(conn, f"/api/v1/surveys/{survey}/responses/", body, key)
            mine.append(time.perf_counter() - t0)
            if status != 201:
                with lock:
                    failures.append(f"{status} {content[:200]!r}")
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(CLIENTS)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - start
    if failures:
        raise RuntimeError(f"{len(failures)} single submissions failed, e.g. {failures[0]}")
    ordered = sorted(latencies)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))] * 1000

    return {
        "requests": len(ordered),
        "rate": len(ordered) / elapsed,
        "p50_ms": pct(50),
        "p95_ms": pct(95),
        "p99_ms": pct(99),
    }


WRK_SCRIPT = """
local counter = 0
local next_id = 0
local answers = {ANSWERS}
function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
end
function request()
  counter = counter + 1
  local body = '{"participant":"w' .. id .. '-' .. counter .. '","answers":'
    .. answers[(counter % #answers) + 1] .. '}'
  return wrk.format("POST", nil, nil, body)
end
function done(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %.3f %.3f %.3f\\n", summary.requests,
    summary.errors.status + summary.errors.connect + summary.errors.read
      + summary.errors.write + summary.errors.timeout,
    summary.duration, latency:percentile(50) / 1000, latency:percentile(95) / 1000,
    latency:percentile(99) / 1000))
end
"""


def _wrk() -> str | None:
    """Debian's wrk (installed when missing and root); ``None`` means use Python threads."""
    path = shutil.which("wrk")
    if path is None and os.geteuid() == 0:
        from tests.servers import apt_install

        apt_install("wrk")
        path = shutil.which("wrk")
    return path


def bench_single_wrk(wrk: str, port: int, survey: int, key: str, seconds: int) -> dict[str, float]:
    """16 keep-alive connections from wrk (a C client: little CPU taken from the server)."""
    answers = ", ".join(repr(json.dumps(_answers(i))) for i in range(140))
    script = Path(tempfile.mkdtemp()) / "single.lua"
    script.write_text(WRK_SCRIPT.replace("{ANSWERS}", "{" + answers + "}"))
    result = subprocess.run(
        [
            wrk,
            "-t2",
            f"-c{CLIENTS}",
            f"-d{seconds}s",
            # wrk's default 2 s timeout counted slow answers on a loaded machine as
            # failures (12 of ~1,500 at load 8, 2026-11-27): wait as long as a client would.
            "--timeout",
            "30s",
            "-s",
            str(script),
            "-H",
            f"Authorization: Bearer {key}",
            "-H",
            "Content-Type: application/json",
            f"http://127.0.0.1:{port}/api/v1/surveys/{survey}/responses/",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    )
    line = next(line for line in result.stdout.splitlines() if line.startswith("RESULT"))
    requests, errors, duration_us, p50, p95, p99 = line.split()[1:]
    if int(errors):
        raise RuntimeError(f"{errors} single submissions failed:\n{result.stdout}")
    return {
        "requests": int(requests),
        "rate": int(requests) / (int(duration_us) / 1e6),
        "p50_ms": float(p50),
        "p95_ms": float(p95),
        "p99_ms": float(p99),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bulk-batches", type=int, default=10)
    parser.add_argument("--bulk-size", type=int, default=10_000)
    parser.add_argument("--singles", type=int, default=4_000, help="single submissions in all")
    parser.add_argument("--workers", type=int, default=int(os.environ.get("BENCH_WORKERS", "2")))
    parser.add_argument("--threads", type=int, default=int(os.environ.get("BENCH_THREADS", "4")))
    parser.add_argument("--single-seconds", type=int, default=15, help="wrk run length")
    parser.add_argument("--python-client", action="store_true", help="threads instead of wrk")
    parser.add_argument("--no-fail", action="store_true")
    parser.add_argument(
        "--privacy-budget",
        type=float,
        default=None,
        help="also run bulk and single submissions to a survey of a consultation with this "
        "privacy budget (issue 28: the ledger's cost beside the figures without one)",
    )
    args = parser.parse_args(argv)

    from tests.servers import free_port, running_services

    with running_services(durable=True) as env:
        env = {**env, "SUBMISSION_RATE_LIMIT": "100000000/minute"}
        survey, key, budgeted = _prepare(env, args.privacy_budget)
        port = free_port()
        log = Path(env["INTEGRATION_WORKDIR"]) / "gunicorn.log"
        server = _start_gunicorn(env, port, args.workers, args.threads, log)
        try:
            postmaster = int(
                (Path(env["INTEGRATION_WORKDIR"]) / "pg" / "pgdata" / "postmaster.pid")
                .read_text()
                .split()[0]
            )
            bulk = bench_bulk(port, survey, key, max(1, args.bulk_batches), args.bulk_size)
            app0, db0 = _cpu_seconds([server.pid]), _cpu_seconds([postmaster])
            wrk = None if args.python_client else _wrk()
            if wrk:
                single = bench_single_wrk(wrk, port, survey, key, args.single_seconds)
            else:
                single = bench_single(port, survey, key, max(1, args.singles // CLIENTS))
            single["client"] = "wrk" if wrk else "python threads"
            app_cpu = (_cpu_seconds([server.pid]) - app0) / single["requests"] * 1000
            db_cpu = (_cpu_seconds([postmaster]) - db0) / single["requests"] * 1000
            capped: dict[str, dict[str, float]] = {}
            if budgeted is not None:
                capped["bulk"] = bench_bulk(
                    port, budgeted, key, max(1, args.bulk_batches), args.bulk_size
                )
                if wrk:
                    capped["single"] = bench_single_wrk(
                        wrk, port, budgeted, key, args.single_seconds
                    )
                else:
                    capped["single"] = bench_single(
                        port, budgeted, key, max(1, args.singles // CLIENTS)
                    )
        except Exception:
            print(log.read_text(errors="replace")[-5000:], file=sys.stderr)
            raise
        finally:
            server.terminate()
            server.wait(timeout=30)

    rows = [
        (
            "bulk submission (responses/s, 7 answers each)",
            f"{bulk['rate']:,.0f}",
            f">= {BULK_TARGET:,.0f}",
            bulk["rate"] >= BULK_TARGET,
        ),
        ("  median 10,000-response batch (s)", f"{bulk['batch_median_s']:.2f}", "", None),
        (
            f"single submission p95 latency, {CLIENTS} clients (ms)",
            f"{single['p95_ms']:.1f}",
            f"< {P95_TARGET_MS:.0f}",
            single["p95_ms"] < P95_TARGET_MS,
        ),
        ("  p50 / p99 (ms)", f"{single['p50_ms']:.1f} / {single['p99_ms']:.1f}", "", None),
        ("  throughput (requests/s)", f"{single['rate']:,.0f}", "", None),
        (
            "  CPU per request: gunicorn / PostgreSQL (ms)",
            f"{app_cpu:.1f} / {db_cpu:.1f}",
            "",
            None,
        ),
    ]
    if capped:
        rows += [
            (
                f"with a privacy budget of {args.privacy_budget:g}: bulk (responses/s)",
                f"{capped['bulk']['rate']:,.0f}",
                "",
                None,
                f"{bulk['rate']:,.0f}",
            ),
            (
                "  median 10,000-response batch (s)",
                f"{capped['bulk']['batch_median_s']:.2f}",
                "",
                None,
                f"{bulk['batch_median_s']:.2f}",
            ),
            (
                "  single p95 / p50 (ms)",
                f"{capped['single']['p95_ms']:.1f} / {capped['single']['p50_ms']:.1f}",
                "",
                None,
                f"{single['p95_ms']:.1f} / {single['p50_ms']:.1f}",
            ),
            (
                "  single throughput (requests/s)",
                f"{capped['single']['rate']:,.0f}",
                "",
                None,
                f"{single['rate']:,.0f}",
            ),
        ]
    print(
        f"\nAPI benchmark: gunicorn {args.workers} worker(s) x {args.threads} thread(s), "
        f"PostgreSQL (durable), {os.cpu_count()} CPU(s), "
        f"load average {os.getloadavg()[0]:.1f} (other processes share the CPUs)"
    )
    table = Table("API submissions")
    for name, value, target, ok, *baseline in rows:
        table.add(
            name.strip(),
            value,
            target=target,
            ok=ok,
            baseline=baseline[0] if baseline else None,
            baseline_name="no budget" if baseline else "",
        )
    table.note(
        f"(bulk: {bulk['responses']:,} responses in {bulk['seconds']:.1f} s, "
        f"{bulk['body_mb']:.1f} MB per batch; single: {single['requests']:,} requests "
        f"from {single['client']})"
    )
    status = table.finish()
    return 0 if args.no_fail else status


if __name__ == "__main__":
    sys.exit(main())
