"""``python manage.py demo``: a complete deliberative consultation on the embedded default.

1. Creates an organisation, its keys, a consultation, a profile survey and an
   opinion survey through the services; together they use every mechanism.
2. Simulates residents with correlated attributes (fixed seed) and distorts
   their answers on the "device" with the Python client.
3. Submits the distorted answers (and a calibration sample) through the REST
   API, over real HTTP to an in-process server on loopback.
4. Runs a conjunctive count, a conditional mean, distributions with every
   estimator and a stratified participant sample through the API, and prints
   the true value beside the naive and the reconstructed estimate.
5. Writes the opinion survey's HTML report to ``var/reports/``.
6. On the embedded default only (SQLite, debug), creates or resets the local superuser
   ``demo-admin`` with a newly generated password and prints the login for the admin
   site (``make serve``); against any other database it creates no login.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import numpy as np
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.handlers.wsgi import WSGIHandler
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection
from django.utils import timezone

from config.deliberation_demo import deliberation
from consultations.models import Organisation
from consultations.services import api_key_create, consultation_create, organisation_create
from privacy.client import PortalClient, distort_table, table_responses
from reconstruction.algorithms.metrics import reconstruction_error
from reconstruction.algorithms.simulation import (
    AGE_RANGE,
    CHILDREN,
    DISTRICTS,
    INCOME_RANGE,
    SEXES,
    simulate_candidates,
)
from surveys.services import survey_create, survey_open

SATISFACTION = ("1", "2", "3", "4", "5")
SITES = ("A", "B", "C", "D", "E", "F", "G")
ATTENDANCE = ("never", "rarely", "often", "always")
DISTRICT_CHANNEL = [
    [0.60, 0.10, 0.10, 0.10, 0.10],
    [0.10, 0.60, 0.10, 0.10, 0.10],
    [0.05, 0.05, 0.70, 0.10, 0.10],
    [0.10, 0.10, 0.10, 0.60, 0.10],
    [0.10, 0.05, 0.05, 0.10, 0.70],
]

PROFILE_QUESTIONS: list[dict[str, Any]] = [
    {
        "key": "sex",
        "text": "Sex",
        "type": "binary",
        "categories": list(SEXES),
        "mechanism": {"name": "randomised_response", "retain": 0.75},
    },
    {
        "key": "district",
        "text": "District you live in",
        "type": "nominal",
        "categories": list(DISTRICTS),
        "mechanism": {"name": "randomised_response", "matrix": DISTRICT_CHANNEL},
    },
    {
        "key": "children",
        "text": "Children at home",
        "type": "binary",
        "categories": list(CHILDREN),
        "mechanism": {"name": "randomised_response", "retain": 0.8},
    },
    {
        "key": "age",
        "text": "Age",
        "type": "continuous",
        "range": list(AGE_RANGE),
        "mechanism": {"name": "additive_uniform", "half_width": 10},
    },
    {
        "key": "income",
        "text": "Monthly income",
        "type": "continuous",
        "range": list(INCOME_RANGE),
        "mechanism": {"name": "additive_gaussian", "sigma": 800},
    },
]
OPINION_QUESTIONS: list[dict[str, Any]] = [
    {
        "key": "satisfaction",
        "text": "How satisfied are you with the school plans?",
        "type": "ordinal",
        "categories": list(SATISFACTION),
        "mechanism": {"name": "negative_uniform"},
    },
    {
        "key": "site",
        "text": "Preferred site for the new school",
        "type": "ordinal",
        "categories": list(SITES),
        "mechanism": {"name": "negative_gaussian", "sigma": 1.5},
    },
    {
        "key": "attendance",
        "text": "How often did you attend council meetings?",
        "type": "ordinal",
        "categories": list(ATTENDANCE),
        "mechanism": {"name": "negative_manual"},
    },
]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """No access log: it would record the client's address."""


@contextmanager
def local_api() -> Iterator[str]:
    """Serve the project on a free loopback port in a background thread."""
    server = make_server(
        "127.0.0.1", 0, WSGIHandler(), server_class=WSGIServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def manual_negative_choice(true_codes: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """How residents pick an answer that is NOT theirs: far-off answers are likelier.

    (000_1b7f9a8e281301b4.txt observes that manual selection is not uniform; this is a
    plausible behaviour for the simulation, estimated back from calibration pairs.)
    """
    distance = np.abs(np.arange(k)[None, :] - true_codes[:, None]).astype(float)
    # Proportional to the distance: the channel's condition number is 7.7 for k = 4, so
    # 2,000 calibration pairs estimate an invertible channel whatever the draw (with
    # distance**1.5 it was 18.7, and one draw of the demo's stream gave an estimate of
    # condition 2,450, which the product rightly refuses).
    weights = distance
    weights /= weights.sum(axis=1, keepdims=True)
    cumulative = weights.cumsum(axis=1)
    draws = rng.random(len(true_codes))[:, None]
    return np.minimum((draws > cumulative).sum(axis=1), k - 1)


# What the table shows for a result that disclosure control refused or suppressed.
REFUSED: dict[str, Any] = {"estimate": None, "ci95": None}
NOTHING: tuple[float, None] = (float("nan"), None)


def _number(value: float | None) -> float:
    return float("nan") if value is None else float(value)


def _interval(ci: list[float | None] | None) -> tuple[float, float] | None:
    if not ci or None in ci:
        return None
    return (float(ci[0]), float(ci[1]))  # type: ignore[arg-type]


DEMO_ADMIN = "demo-admin"


def demo_admin_login() -> tuple[str, str] | None:
    """Create (or reset) the local demo superuser with a fresh random password.

    Only on the embedded default (SQLite with DJANGO_DEBUG=1), a throw-away database on the
    developer's own machine: a deployment's database never gets a login with a password
    printed to a terminal (use ``createsuperuser`` there). Returns (username, password),
    or None when no login was made."""
    if connection.vendor != "sqlite" or not settings.DEBUG:
        return None
    password = secrets.token_urlsafe(12)
    user, _ = get_user_model().objects.get_or_create(username=DEMO_ADMIN)
    user.is_staff = user.is_superuser = user.is_active = True
    user.set_password(password)
    user.save()
    return DEMO_ADMIN, password


class Command(BaseCommand):
    help = "Run a complete demo consultation on the embedded default and print what it found."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--residents", type=int, default=10000)
        parser.add_argument("--seed", type=int, default=2026)

    # -- output helpers --------------------------------------------------------------
    def step(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        self.stdout.write(f"[{elapsed:5.1f}s] {message}")
        self.stdout.flush()

    def handle(self, *args: Any, **options: Any) -> None:
        self.started = time.monotonic()
        # The table below is the demo's output; per-task log lines would bury it.
        for name in ("celery", "kombu", "matplotlib"):
            logging.getLogger(name).setLevel(logging.WARNING)
        n = int(options["residents"])
        if n < 500:
            self.stderr.write("--residents must be at least 500 for meaningful estimates")
            raise SystemExit(2)
        rng = np.random.default_rng(int(options["seed"]))

        self.step("Creating the organisation, keys, consultation and surveys (services)")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        organisation = Organisation.objects.filter(slug="demo").first() or organisation_create(
            slug="demo", name="Demo City Council"
        )
        analyst_key = api_key_create(organisation=organisation, role="analyst", name="demo").key
        portal_key = api_key_create(organisation=organisation, role="portal", name="demo").key
        consultation = consultation_create(
            organisation=organisation,
            title=f"New primary school ({stamp})",
            description="Where should the new primary school be built, and who should discuss it?",
            actor="demo",
        )
        profile = survey_create(
            organisation=organisation,
            consultation=consultation,
            kind="profile",
            title="Candidate registration",
            questions=PROFILE_QUESTIONS,
            actor="demo",
        )
        opinion = survey_create(
            organisation=organisation,
            consultation=consultation,
            kind="opinion",
            title="School plans",
            questions=OPINION_QUESTIONS,
            actor="demo",
        )
        survey_open(survey=profile, actor="demo")
        survey_open(survey=opinion, actor="demo")
        self.stdout.write(
            f"         organisation {organisation.slug!r}, consultation {consultation.pk}, "
            f"profile survey {profile.pk}, opinion survey {opinion.pk}"
        )

        self.step(f"Simulating {n} residents with correlated attributes (seed {options['seed']})")
        pool = simulate_candidates(n, rng=rng)
        truth = self.opinions(pool, rng)
        participants = np.array([f"r-{i:06d}" for i in range(n)])

        with local_api() as base_url:
            self.api = requests.Session()
            self.api.headers["Authorization"] = f"Bearer {analyst_key}"
            self.base = f"{base_url}/api/v1"
            portal = PortalClient(base_url, portal_key)
            ingest = PortalClient(base_url, analyst_key)

            self.step("Distorting every answer on the residents' devices (Python client)")
            profile_scheme = portal.scheme(profile.pk)
            opinion_scheme = portal.scheme(opinion.pk)
            sent_profile = distort_table(
                profile_scheme,
                {
                    "sex": np.array(SEXES)[pool.sex],
                    "district": np.array(DISTRICTS)[pool.district],
                    "children": np.array(CHILDREN)[pool.children],
                    "age": pool.age,
                    "income": pool.income,
                },
                rng,
            )
            sent_opinion = distort_table(
                opinion_scheme,
                {
                    "satisfaction": np.array(SATISFACTION)[truth["satisfaction"]],
                    "site": np.array(SITES)[truth["site"]],
                    "attendance": np.array(ATTENDANCE)[truth["attendance_negative"]],
                },
                rng,
            )

            self.step("Uploading 2000 calibration pairs for the manual negative question")
            calibration_true = rng.integers(0, len(ATTENDANCE), size=2000)
            calibration_negative = manual_negative_choice(calibration_true, len(ATTENDANCE), rng)
            self.post(
                f"surveys/{opinion.pk}/calibration/",
                {
                    "question": "attendance",
                    "pairs": [
                        [ATTENDANCE[t], ATTENDANCE[q]]
                        for t, q in zip(calibration_true, calibration_negative, strict=True)
                    ],
                },
            )

            for survey, sent, label in (
                (profile, sent_profile, "profile"),
                (opinion, sent_opinion, "opinion"),
            ):
                responses = table_responses(participants, sent)
                done = 0
                for start in range(0, n, 2000):
                    # bulks of 2,000: a server-side (analyst) key; a portal key sends 100
                    done += ingest.submit_bulk(survey.pk, responses[start : start + 2000])
                    self.step(f"Submitted {done}/{n} {label} responses through the API")

            rows = self.analyses(profile.pk, opinion.pk, pool, truth, sent_profile, sent_opinion)
            self.print_table(rows)
            deliberation(
                self,
                organisation=organisation,
                consultation=consultation,
                profile_id=profile.pk,
                participants=participants,
                pool=pool,
                ingest=ingest,
                rng=rng,
            )

            self.step("Building the opinion survey's report (HTML with charts)")
            report = self.post(f"surveys/{opinion.pk}/reports/", {})
            status = self.wait(report["url"])
            if status["status"] != "succeeded":
                raise SystemExit(f"the report failed: {status['error']}")
            html = self.api.get(
                f"{self.base}/reports/{report['id']}/download/",
                params={"format": "html"},
                timeout=60,
            )
            html.raise_for_status()
        path = Path(settings.REPORTS_DIR) / f"survey-{opinion.pk}-report-{report['id']}.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html.text, encoding="utf-8")
        self.step(f"Report written to {path}")
        login = demo_admin_login()
        if login is None:
            self.step("No local admin login made (not the embedded SQLite default).")
        else:
            self.stdout.write("")
            self.stdout.write("Admin site (local demo login, embedded SQLite default only):")
            self.stdout.write("  make serve            then open http://127.0.0.1:8000/admin/")
            self.stdout.write("  make serve PORT=8080  for another port")
            self.stdout.write(f"  username  {login[0]}")
            self.stdout.write(f"  password  {login[1]}   (new on every `make demo`)")
            self.stdout.write("")
        self.step("Done.")

    # -- simulation of opinions --------------------------------------------------------
    def opinions(self, pool: Any, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Opinions that depend on the profile (so conditions across surveys matter)."""
        n = pool.n
        # Parents are more satisfied; district C (well served) less so.
        base = 2.0 + 1.2 * pool.children - 0.6 * (pool.district == 4) + rng.normal(0, 1.0, n)
        satisfaction = np.clip(np.round(base), 0, 4).astype(int)
        # People prefer a site near their district.
        preferred = np.clip(np.round(pool.district * 1.4 + rng.normal(0, 1.2, n)), 0, 6)
        site = preferred.astype(int)
        attendance = np.clip(np.round((pool.age - 16) / 28 + rng.normal(0, 0.8, n)), 0, 3)
        attendance = attendance.astype(int)
        negative = manual_negative_choice(attendance, len(ATTENDANCE), rng)
        return {
            "satisfaction": satisfaction,
            "site": site,
            "attendance": attendance,
            "attendance_negative": negative,
        }

    # -- API helpers -------------------------------------------------------------------
    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        response = self.api.post(f"{self.base}/{path}", json=body, timeout=120)
        if response.status_code >= 400:
            raise SystemExit(f"POST {path} failed with {response.status_code}: {response.text}")
        return response.json() if response.content else {}

    def wait(self, url: str) -> dict[str, Any]:
        while True:
            status = self.api.get(f"{self.base}{url.removeprefix('/api/v1')}", timeout=60).json()
            if status["status"] in ("succeeded", "failed", "refused"):
                return status
            time.sleep(0.2)

    def analyse(self, body: dict[str, Any]) -> dict[str, Any] | None:
        """Run one analysis; ``None`` when disclosure control refused it (said, not fatal).

        A refusal is the guard doing its job (a group below the threshold, or a result
        that would difference against one already published), so the demo shows the
        reason and goes on; a failed job stops it.
        """
        created = self.post("analyses/", body)
        status = self.wait(created["url"])
        if status["status"] == "refused":
            self.step(f"  refused by disclosure control: {status.get('error') or status}")
            return None
        if status["status"] != "succeeded":
            raise SystemExit(f"analysis {body} failed: {status['error']}")
        return dict(status["result"])

    def suppressed(self, label: str, result: dict[str, Any], index: int) -> None:
        """Say why a distribution's cell is not published (it is not hidden silently)."""
        counts = result.get("counts") or []
        if index < len(counts) and counts[index] is None and result.get("suppression"):
            self.step(f"  {label} not published: {result['suppression']}")

    # -- the analyses --------------------------------------------------------------------
    def analyses(
        self,
        profile_id: int,
        opinion_id: int,
        pool: Any,
        truth: dict[str, np.ndarray],
        sent_profile: dict[str, np.ndarray],
        sent_opinion: dict[str, np.ndarray],
    ) -> list[tuple[str, float, float, float, tuple[float, float] | None]]:
        rows: list[tuple[str, float, float, float, tuple[float, float] | None]] = []

        self.step("Analysis: women aged at most 30 with children (conjunctive count)")
        where = [
            {"attribute": "sex", "op": "in", "value": ["F"]},
            {"attribute": "age", "op": "lte", "value": 30},
            {"attribute": "children", "op": "in", "value": ["Y"]},
        ]
        result = self.analyse({"survey": profile_id, "kind": "count", "where": where}) or REFUSED
        true_count = float(np.sum((pool.sex == 0) & (pool.age <= 30) & (pool.children == 1)))
        naive = float(
            np.sum(
                (sent_profile["sex"] == "F")
                & (sent_profile["age"] <= 30)
                & (sent_profile["children"] == "Y")
            )
        )
        rows.append(
            (
                "count: F, age <= 30, children",
                true_count,
                naive,
                _number(result["estimate"]),
                _interval(result["ci95"]),
            )
        )

        self.step("Analysis: mean income of residents with children (conditional mean)")
        result = (
            self.analyse(
                {
                    "survey": profile_id,
                    "kind": "mean",
                    "attribute": "income",
                    "where": [{"attribute": "children", "op": "in", "value": ["Y"]}],
                }
            )
            or REFUSED
        )
        true_mean = float(pool.income[pool.children == 1].mean())
        naive = float(sent_profile["income"][sent_profile["children"] == "Y"].mean())
        rows.append(
            (
                "mean income | children",
                true_mean,
                naive,
                _number(result["estimate"]),
                _interval(result["ci95"]),
            )
        )

        self.step("Analysis: satisfaction (uniform negative survey) with every estimator")
        true_counts = np.bincount(truth["satisfaction"], minlength=5).astype(float)
        reported = np.array([np.sum(sent_opinion["satisfaction"] == s) for s in SATISFACTION])
        for method in ("em_as", "eq", "nstops", "nstops_i", "nstops_ii", "mle"):
            result = self.analyse(
                {
                    "survey": opinion_id,
                    "kind": "distribution",
                    "attribute": "satisfaction",
                    "method": method,
                }
            )
            if result is None:
                rows.append(
                    (f"satisfaction='5' ({method})", true_counts[4], float(reported[4]), *NOTHING)
                )
                continue
            estimate = np.array([np.nan if c is None else c for c in result["counts"]])
            published = np.isfinite(estimate)
            # The error over the published cells (suppressed ones have no estimate).
            error = reconstruction_error(estimate[published], true_counts[published])
            hidden = int((~published).sum())
            label = f"error {error:.4f}" + (f", {hidden} suppressed" if hidden else "")
            if hidden:
                self.step(f"  satisfaction ({method}): {result['suppression']}")
            rows.append(
                (
                    f"satisfaction='5' ({method}; {label})",
                    true_counts[4],
                    float(reported[4]),
                    float(estimate[4]),
                    _interval(result["ci95"][4]),
                )
            )

        self.step("Analysis: preferred site (Gaussian negative survey) and attendance (manual)")
        result = self.analyse(
            {"survey": opinion_id, "kind": "distribution", "attribute": "site"}
        ) or {"counts": [None] * 7, "ci95": [None] * 7}
        self.suppressed("site='C'", result, 2)
        true_sites = np.bincount(truth["site"], minlength=7)
        rows.append(
            (
                "site='C' (em_as)",
                float(true_sites[2]),
                float(np.sum(sent_opinion["site"] == "C")),
                _number(result["counts"][2]),
                _interval(result["ci95"][2]),
            )
        )
        result = self.analyse(
            {
                "survey": opinion_id,
                "kind": "distribution",
                "attribute": "attendance",
                "method": "mle",
            }
        ) or {"counts": [None] * 4, "ci95": [None] * 4}
        self.suppressed("attendance='never'", result, 0)
        true_attendance = np.bincount(truth["attendance"], minlength=4)
        rows.append(
            (
                "attendance='never' (mle, calibrated)",
                float(true_attendance[0]),
                float(np.sum(sent_opinion["attendance"] == "never")),
                _number(result["counts"][0]),
                _interval(result["ci95"][0]),
            )
        )

        self.step("Analysis: mean age of the very satisfied (condition across both surveys)")
        result = (
            self.analyse(
                {
                    "survey": opinion_id,
                    "kind": "mean",
                    "attribute": "age",
                    "where": [{"attribute": "satisfaction", "op": "in", "value": ["4", "5"]}],
                }
            )
            or REFUSED
        )
        true_mean = float(pool.age[truth["satisfaction"] >= 3].mean())
        rows.append(
            (
                "mean age | satisfaction >= 4",
                true_mean,
                float("nan"),
                _number(result["estimate"]),
                _interval(result["ci95"]),
            )
        )

        self.step("Analysis: a stratified panel of 30 aged 18-40, 15 women and 15 men")
        result = self.analyse(
            {
                "survey": profile_id,
                "kind": "sample",
                "size": 30,
                "seed": 7,
                "where": [{"attribute": "age", "op": "between", "value": [18, 40]}],
                "strata": [
                    {"where": [{"attribute": "sex", "op": "in", "value": ["F"]}], "size": 15},
                    {"where": [{"attribute": "sex", "op": "in", "value": ["M"]}], "size": 15},
                ],
            }
        )
        if result is None:
            return rows
        # expected_precision is the share meeting the stratum's whole condition (age and
        # sex), so compare it with that share, not with the age condition alone.
        meets_parts = []
        for sex_code, refs in enumerate(result["strata"]):
            drawn = np.array([int(ref.split("-")[1]) for ref in refs])
            age_ok = (pool.age[drawn] >= 18) & (pool.age[drawn] < 40)
            meets_parts.append(age_ok & (pool.sex[drawn] == sex_code))
        meets = np.concatenate(meets_parts)
        rows.append(
            (
                "panel: share truly meeting age 18-40 and its stratum's sex",
                float(meets.mean()),
                float("nan"),
                result["expected_precision"],
                None,
            )
        )
        true_pool = float(np.sum((pool.age >= 18) & (pool.age < 40)))
        rows.append(
            (
                "panel: pool aged 18-40",
                true_pool,
                float(np.sum((sent_profile["age"] >= 18) & (sent_profile["age"] < 40))),
                result["pool_estimate"],
                None,
            )
        )
        return rows

    def print_table(
        self, rows: list[tuple[str, float, float, float, tuple[float, float] | None]]
    ) -> None:
        self.stdout.write("")
        header = (
            f"{'quantity':<48} {'true':>10} {'naive':>10} {'reconstructed':>14} "
            f"{'95% interval':>22} {'error':>9}"
        )
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for name, true, naive, estimate, ci in rows:
            interval = f"[{ci[0]:.1f}, {ci[1]:.1f}]" if ci and None not in ci else ""
            naive_text = "" if np.isnan(naive) else f"{naive:.2f}"
            if np.isnan(estimate):  # refused or suppressed by disclosure control
                self.stdout.write(
                    f"{name:<48} {true:>10.2f} {naive_text:>10} {'not published':>14}"
                )
                continue
            error = (estimate - true) / true * 100 if true else float("nan")
            self.stdout.write(
                f"{name:<48} {true:>10.2f} {naive_text:>10} {estimate:>14.2f} {interval:>22} "
                f"{error:>8.1f}%"
            )
        self.stdout.write("")
