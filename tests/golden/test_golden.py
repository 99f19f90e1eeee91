"""Golden results: every analysis kind's API response, bit for bit, on seeded pools.

Issue 24 re-cuts the analysis path (a module per kind, gather -> fit -> publish, one
estimator core) with behaviour unchanged. This test pins what a user meets: the ``POST
/analyses/`` answer (202 or the 400's body), the job as ``GET`` shows it (status,
progress, result, refusal), the CSV exports, a panel's probabilities, the reports'
JSON and CSV downloads, and what the audit trail records, for a fixed list of requests
on seeded pools:

- ``demo``: the demo consultation's questions (every mechanism; the manual negative
  question calibrated from 2,000 pairs as ``make demo`` does) and the demo's analyses,
  plus every method of every kind, continuous and discrete conditions, strata, refusals
  by the group threshold and by the query audit, and bad requests;
- ``bench``: the seven questions of ``bench/bench_scale.py`` with its skewed data and its
  count, mean, sample and stratified sample, and a report;
- ``whole_years``: whole-year ages without a declared step (the whole-number tests) and
  under the staircase mechanism with ``step: 1``;
- ``change``: a before and an after survey of the same simulated residents (issue 29):
  the change, with a condition on the profile, with another key after, and its 400s;
- ``panel``: the exact panel consultation of ``test_panel_api`` (three objectives,
  ``max_outside``) and a panel from distorted answers.

The requests run in order (the query audit depends on what was published before). The
expected values are ``tests/golden/<pool>.json``; floats are compared exactly (JSON keeps
``repr``, which round-trips). Ids, URLs with ids, timestamps and the progress of an
unfinished or refused job (written at most twice a second, so it depends on timing) are
replaced by placeholders.

Regenerate ONLY for an intended change of results, named in the commit message with the
issue that asks for it, never to make a refactoring pass::

    GOLDEN_UPDATE=1 .venv/bin/python -m pytest tests/golden -q

A failure lists each case whose output changed and the first differing path.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from rest_framework.test import APIClient

from config.management.commands.demo import ATTENDANCE as DEMO_ATTENDANCE
from config.management.commands.demo import manual_negative_choice
from consultations.models import AuditEvent, Organisation
from consultations.services import consultation_create
from privacy.client import distort_table, table_responses
from reconstruction.algorithms.simulation import SEXES, simulate_candidates
from surveys.selectors import survey_scheme
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.factories import seven_questions
from tests.reconstruction.conftest import client_for
from tests.reconstruction.data import distorted_consultation
from tests.reconstruction.test_panel_api import _exact_consultation

pytestmark = pytest.mark.django_db

HERE = Path(__file__).resolve().parent
UPDATE = os.environ.get("GOLDEN_UPDATE") == "1"
URL = "/api/v1/analyses/"
VOLATILE = {"id", "created_at", "finished_at", "started_at", "generated_at", "created"}


# --------------------------------------------------------------------------- recording


class Recorder:
    """Runs requests in order and keeps their normalised outputs by case name."""

    def __init__(self, client: APIClient, capture: Callable[..., Any], surveys: dict[str, int]):
        self.client = client
        self.capture = capture
        self.surveys = surveys  # label -> pk, replaced by the label in the outputs
        self.cases: dict[str, Any] = {}

    # -- normalising ------------------------------------------------------------------
    def clean(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, dict):
            return {
                k: ("<volatile>" if k in VOLATILE else self.clean(v, k)) for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.clean(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        if key in ("survey", "after") and isinstance(value, int):
            return self.label(value)
        return value

    def label(self, pk: int) -> str:
        for name, known in self.surveys.items():
            if known == pk:
                return f"<survey {name}>"
        return f"<survey ?{pk}>"

    def text(self, value: str) -> str:
        value = re.sub(r"/(analyses|reports|surveys)/\d+/", r"/\1/<id>/", value)
        value = re.sub(r"\b(analysis|report|survey) \d+\b", r"\1 <id>", value)
        return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "<time>", value)

    def body(self, spec: dict[str, Any]) -> dict[str, Any]:
        return {  # survey labels (the survey, a change's after survey) as their ids
            k: self.surveys[v] if k in ("survey", "after") and isinstance(v, str) else v
            for k, v in spec.items()
        }

    # -- requests ---------------------------------------------------------------------
    def analysis(self, name: str, spec: dict[str, Any], *, exports: bool = False) -> Any:
        assert name not in self.cases, name
        audit_from = AuditEvent.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
        with self.capture(execute=True):
            response = self.client.post(URL, self.body(spec), format="json")
        case: dict[str, Any] = {"post_status": response.status_code}
        created = response.json()
        if response.status_code != 202:
            case["post"] = self.clean(created)
        else:
            job = self.client.get(created["url"]).json()
            if job["status"] != "succeeded":  # written at most twice a second: timing
                job["progress"] = "<timed>"
            case["job"] = self.clean(job)
            result = job.get("result") or {}
            if exports and job["status"] == "succeeded":
                export = self.client.get(f"{created['url']}export/?format=csv")
                case["export_csv"] = (export.status_code, self.text(export.content.decode()))
                # What travels beside the table (the zip's notes and request.json).
                bundle = self.client.get(f"{created['url']}export/?format=zip")
                with zipfile.ZipFile(io.BytesIO(bundle.content)) as archive:
                    case["export_notes"] = self.text(archive.read("notes.csv").decode())
                    case["export_request"] = self.clean(json.loads(archive.read("request.json")))
            if "probabilities_url" in result:
                csv = self.client.get(result["probabilities_url"])
                case["probabilities_csv"] = b"".join(csv.streaming_content).decode()
        case["audit"] = [
            [event.action, self.text(event.target), self.clean(event.details)]
            for event in AuditEvent.objects.filter(pk__gt=audit_from).order_by("pk")
        ]
        self.cases[name] = case
        return case

    def report(self, name: str, survey: str) -> None:
        assert name not in self.cases, name
        with self.capture(execute=True):
            response = self.client.post(f"/api/v1/surveys/{self.surveys[survey]}/reports/")
        assert response.status_code == 202, response.json()
        url = response.json()["url"]
        status = self.client.get(url).json()
        case: dict[str, Any] = {"status": self.clean(status)}
        if status["status"] == "succeeded":
            pk = status["id"]
            document = self.client.get(f"/api/v1/reports/{pk}/download/?format=json")
            case["json"] = self.clean(document.json())
            table = self.client.get(f"/api/v1/reports/{pk}/download/?format=csv")
            case["csv"] = self.text(table.content.decode())
        self.cases[name] = case


def compare(pool: str, cases: dict[str, Any]) -> None:
    path = HERE / f"{pool}.json"
    actual = json.loads(json.dumps(cases))  # what the file holds: JSON floats are repr's
    if UPDATE:
        path.write_text(json.dumps(actual, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        return
    expected = json.loads(path.read_text())
    changed = []
    for name in sorted(set(expected) | set(actual)):
        if name not in actual or name not in expected:
            changed.append(f"{name}: {'missing' if name not in actual else 'new'}")
            continue
        where = first_difference(expected[name], actual[name], name)
        if where is not None:
            changed.append(where)
    assert not changed, f"golden results of {pool!r} changed:\n" + "\n".join(changed)


def first_difference(expected: Any, actual: Any, path: str) -> str | None:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in expected or key not in actual:
                return f"{path}.{key}: only in {'actual' if key in actual else 'expected'}"
            found = first_difference(expected[key], actual[key], f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return f"{path}: length {len(expected)} -> {len(actual)}"
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            found = first_difference(e, a, f"{path}[{i}]")
            if found:
                return found
        return None
    if type(expected) is not type(actual) or expected != actual:
        return f"{path}: {str(expected)[:200]!r} -> {str(actual)[:200]!r}"
    return None


def where(*conditions: tuple[str, str, Any]) -> list[dict[str, Any]]:
    return [{"attribute": a, "op": op, "value": v} for a, op, v in conditions]


# --------------------------------------------------------------------------- pools


def test_demo_consultation(django_capture_on_commit_callbacks: Any) -> None:
    analyst = client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    data = distorted_consultation(organisation, n=3000, seed=2026)
    rng = np.random.default_rng(2026)
    true = rng.integers(0, len(DEMO_ATTENDANCE), size=2000)
    negative = manual_negative_choice(true, len(DEMO_ATTENDANCE), rng)
    calibrated = analyst.post(
        f"/api/v1/surveys/{data.opinion.pk}/calibration/",
        {
            "question": "attendance",
            "pairs": [
                [DEMO_ATTENDANCE[t], DEMO_ATTENDANCE[q]]
                for t, q in zip(true, negative, strict=True)
            ],
        },
        format="json",
    )
    assert calibrated.status_code < 300, calibrated.json()
    run = Recorder(
        analyst,
        django_capture_on_commit_callbacks,
        {"profile": data.profile.pk, "opinion": data.opinion.pk},
    )
    P, OP = "profile", "opinion"
    women_young_parents = where(("sex", "in", ["F"]), ("age", "lte", 30), ("children", "in", ["Y"]))

    parents = where(("children", "in", ["Y"]))
    # first, while nothing is published that it could difference against
    run.analysis(
        "distribution_age_of_parents",
        {"survey": P, "kind": "distribution", "attribute": "age", "where": parents},
    )

    # count: every method, discrete, continuous and cross-survey conditions, exact answers
    run.analysis(
        "count_demo", {"survey": P, "kind": "count", "where": women_young_parents}, exports=True
    )
    for method in ("joint", "naive"):
        run.analysis(
            f"count_{method}",
            {"survey": P, "kind": "count", "method": method, "where": women_young_parents},
        )
    # Figure 3 assigns values to every participant per replicate: discrete conditions keep
    # it fast (a continuous one costs seconds)
    run.analysis(
        "count_figure3",
        {
            "survey": P,
            "kind": "count",
            "method": "figure3",
            "where": where(("sex", "in", ["F"]), ("children", "in", ["Y"])),
        },
    )
    run.analysis(
        "count_district_income",
        {
            "survey": P,
            "kind": "count",
            "where": where(("district", "in", ["N", "S"]), ("income", "gt", 2000)),
        },
    )
    run.analysis(
        "count_age_between",
        {"survey": P, "kind": "count", "where": where(("age", "between", [25, 45]))},
    )
    run.analysis(
        "count_cross_survey",
        {
            "survey": OP,
            "kind": "count",
            "where": where(("satisfaction", "in", ["4", "5"]), ("sex", "in", ["F"])),
        },
    )
    run.analysis(
        "count_exact_rent",
        {"survey": OP, "kind": "count", "where": where(("housing", "in", ["rent"]))},
    )
    run.analysis(
        "count_exact_tent",
        {"survey": OP, "kind": "count", "where": where(("housing", "in", ["tent"]))},
    )
    run.analysis(
        "count_exact_not_small",
        {"survey": OP, "kind": "count", "where": where(("housing", "in", ["own", "rent", "boat"]))},
    )
    run.analysis(
        "count_exact_differencing",
        {"survey": OP, "kind": "count", "where": where(("housing", "in", ["own", "rent"]))},
    )

    # mean
    run.analysis(
        "mean_demo",
        {"survey": P, "kind": "mean", "attribute": "income", "where": parents},
        exports=True,
    )
    for method in ("unbiased", "figure3", "naive"):
        run.analysis(
            f"mean_{method}",
            {
                "survey": P,
                "kind": "mean",
                "attribute": "income",
                "method": method,
                "where": parents,
            },
        )
    run.analysis("mean_overall", {"survey": P, "kind": "mean", "attribute": "age"})
    run.analysis(
        "mean_overall_naive", {"survey": P, "kind": "mean", "attribute": "age", "method": "naive"}
    )
    run.analysis(
        "mean_cross_survey",
        {
            "survey": OP,
            "kind": "mean",
            "attribute": "age",
            "where": where(("satisfaction", "in", ["4", "5"])),
        },
    )
    run.analysis(
        "mean_continuous_condition",
        {
            "survey": P,
            "kind": "mean",
            "attribute": "income",
            "where": where(("age", "between", [30, 50])),
        },
    )

    # distribution
    for method in ("em_as", "eq", "nstops", "nstops_i", "nstops_ii", "mle"):
        run.analysis(
            f"distribution_satisfaction_{method}",
            {"survey": OP, "kind": "distribution", "attribute": "satisfaction", "method": method},
        )
    run.analysis(
        "distribution_site",
        {"survey": OP, "kind": "distribution", "attribute": "site"},
        exports=True,
    )
    run.analysis(
        "distribution_attendance_mle",
        {"survey": OP, "kind": "distribution", "attribute": "attendance", "method": "mle"},
    )
    run.analysis(
        "distribution_attendance", {"survey": OP, "kind": "distribution", "attribute": "attendance"}
    )
    run.analysis(
        "distribution_housing", {"survey": OP, "kind": "distribution", "attribute": "housing"}
    )
    run.analysis(
        "distribution_age", {"survey": P, "kind": "distribution", "attribute": "age"}, exports=True
    )
    for method in ("em", "as"):
        run.analysis(
            f"distribution_income_{method}",
            {"survey": P, "kind": "distribution", "attribute": "income", "method": method},
        )
    run.analysis(
        "distribution_district_of_women",
        {
            "survey": P,
            "kind": "distribution",
            "attribute": "district",
            "where": where(("sex", "in", ["F"])),
        },
    )
    run.analysis(
        "distribution_site_by_satisfaction",
        {
            "survey": OP,
            "kind": "distribution",
            "attribute": "site",
            "where": where(("satisfaction", "in", ["1"])),
        },
    )

    # sample
    demo_sample = {
        "survey": P,
        "kind": "sample",
        "size": 30,
        "seed": 7,
        "where": where(("age", "between", [18, 40])),
        "strata": [
            {"where": where(("sex", "in", ["F"])), "size": 15},
            {"where": where(("sex", "in", ["M"])), "size": 15},
        ],
    }
    run.analysis("sample_demo", demo_sample, exports=True)
    run.analysis("sample_figure3", {**demo_sample, "method": "figure3", "seed": 8})
    run.analysis("sample_plain", {"survey": P, "kind": "sample", "size": 20, "seed": 1})
    run.analysis(
        "sample_two_conditions",
        {
            "survey": P,
            "kind": "sample",
            "size": 25,
            "seed": 3,
            "where": where(("sex", "in", ["M"]), ("children", "in", ["Y"])),
        },
    )
    run.analysis(
        "sample_too_large_for_pool",
        {
            "survey": OP,
            "kind": "sample",
            "size": 40,
            "seed": 3,
            "where": where(("housing", "in", ["boat", "tent"])),
        },
    )

    # bad requests (400s naming the problem, no job)
    bad: dict[str, dict[str, Any]] = {
        "bad_unknown_attribute": {
            "survey": P,
            "kind": "count",
            "where": where(("height", "gt", 3)),
        },
        "bad_count_without_where": {"survey": P, "kind": "count"},
        "bad_unknown_kind": {"survey": P, "kind": "median", "attribute": "age"},
        "bad_mean_of_discrete": {"survey": P, "kind": "mean", "attribute": "sex"},
        "bad_method_for_kind": {"survey": P, "kind": "mean", "attribute": "age", "method": "em_as"},
        "bad_method_for_continuous": {
            "survey": P,
            "kind": "distribution",
            "attribute": "age",
            "method": "mle",
        },
        "bad_method_within_group": {
            "survey": OP,
            "kind": "distribution",
            "attribute": "site",
            "method": "eq",
            "where": parents,
        },
        "bad_too_few_answers": {"survey": OP, "kind": "distribution", "attribute": "pilot"},
        "bad_sample_larger_than_participants": {
            "survey": P,
            "kind": "sample",
            "size": 5000,
            "seed": 1,
        },
        "bad_op_for_type": {"survey": P, "kind": "count", "where": where(("sex", "gt", 3))},
        "bad_unknown_op": {"survey": P, "kind": "count", "where": where(("age", "gte", 3))},
        "bad_category": {"survey": P, "kind": "count", "where": where(("sex", "in", ["X"]))},
        "bad_size_on_count": {"survey": P, "kind": "count", "size": 3, "where": parents},
        "bad_quotas_on_sample": {
            "survey": P,
            "kind": "sample",
            "size": 5,
            "quotas": [{"where": parents, "min": 1, "max": 2}],
        },
    }
    for name, spec in bad.items():
        run.analysis(name, spec)

    run.report("report_opinion", OP)
    run.report("report_profile", P)
    # After the reports: a count that differences against a report's cells.
    run.analysis(
        "count_after_report",
        {"survey": OP, "kind": "count", "where": where(("housing", "in", ["own", "rent", "tent"]))},
    )
    compare("demo", run.cases)


def test_bench_pool(django_capture_on_commit_callbacks: Any) -> None:
    from bench.bench_scale import STRATIFIED, _true_columns

    analyst = client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    consultation = consultation_create(organisation=organisation, title="National", actor="tests")
    survey = survey_open(
        survey=survey_create(
            organisation=organisation,
            consultation=consultation,
            kind="profile",
            title="National profile",
            questions=seven_questions(),
            actor="tests",
        ),
        actor="tests",
    )
    rng = np.random.default_rng(9)
    n = 6000
    sent = distort_table(survey_scheme(survey), _true_columns(n, rng), rng)
    responses = table_responses([f"p{i}" for i in range(n)], sent)
    responses_submit_bulk(survey=survey, responses=responses, actor="tests")
    run = Recorder(analyst, django_capture_on_commit_callbacks, {"bench": survey.pk})
    S = "bench"
    run.analysis(
        "count",
        {"survey": S, "kind": "count", "where": where(("sex", "in", ["F"]), ("age", "lte", 30))},
    )
    run.analysis(
        "mean",
        {
            "survey": S,
            "kind": "mean",
            "attribute": "income",
            "where": where(("district", "in", ["N", "S"])),
        },
    )
    run.analysis(
        "sample",
        {
            "survey": S,
            "kind": "sample",
            "size": 100,
            "seed": 7,
            "where": where(("age", "between", [18, 40])),
        },
    )
    run.analysis("stratified", {**STRATIFIED, "survey": S}, exports=True)
    run.analysis(
        "count_rare_district",
        {
            "survey": S,
            "kind": "count",
            "where": where(("district", "in", ["C"]), ("skips_class", "in", ["always"])),
        },
    )
    run.analysis(
        "count_eight_conditions_mixed",
        {
            "survey": S,
            "kind": "count",
            "where": where(
                ("sex", "in", ["M"]),
                ("district", "in", ["N", "S", "E"]),
                ("satisfaction", "in", ["3", "4", "5"]),
                ("age", "gt", 30),
                ("income", "lte", 6000),
            ),
        },
    )
    run.analysis(
        "distribution_skips_calibrated_less",
        {"survey": S, "kind": "distribution", "attribute": "skips_class"},
    )
    run.analysis(
        "mean_age_by_satisfaction",
        {
            "survey": S,
            "kind": "mean",
            "attribute": "age",
            "where": where(("satisfaction", "in", ["5"])),
        },
    )
    run.report("report", S)
    compare("bench", run.cases)


def test_whole_years_and_staircase(django_capture_on_commit_callbacks: Any) -> None:
    analyst = client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    sex = {
        "key": "sex",
        "type": "binary",
        "categories": list(SEXES),
        "mechanism": {"name": "randomised_response", "retain": 0.75},
    }
    questions = {
        "whole": [
            sex,
            {
                "key": "age",
                "type": "continuous",
                "range": [16, 100],
                "mechanism": {"name": "additive_uniform", "half_width": 10},
            },
        ],
        "smooth": [
            sex,
            {
                "key": "age",
                "type": "continuous",
                "range": [16, 100],
                "mechanism": {"name": "additive_gaussian", "sigma": 5},
            },
        ],
        "staircase": [
            sex,
            {
                "key": "age",
                "type": "continuous",
                "range": [16, 86],
                "step": 1,
                "mechanism": {"name": "additive_staircase", "epsilon": 4.0, "sensitivity": 70.0},
            },
        ],
    }
    surveys = {}
    for seed, (name, qs) in enumerate(questions.items()):
        consultation = consultation_create(organisation=organisation, title=name, actor="tests")
        survey = survey_open(
            survey=survey_create(
                organisation=organisation,
                consultation=consultation,
                kind="profile",
                title=name,
                questions=qs,
                actor="tests",
            ),
            actor="tests",
        )
        rng = np.random.default_rng(seed + 10)
        n = 3000
        pool = simulate_candidates(n, rng=rng)
        high = 86 if name == "staircase" else 100
        age = np.clip(np.floor(pool.age), 16, high)
        sent = distort_table(
            survey_scheme(survey), {"sex": np.array(SEXES)[pool.sex], "age": age}, rng
        )
        responses_submit_bulk(
            survey=survey,
            responses=table_responses([f"{name}-{i:05d}" for i in range(n)], sent),
            actor="tests",
        )
        surveys[name] = survey.pk
    run = Recorder(analyst, django_capture_on_commit_callbacks, surveys)
    women = where(("sex", "in", ["F"]))
    for name in surveys:
        run.analysis(
            f"{name}_distribution_of_women",
            {"survey": name, "kind": "distribution", "attribute": "age", "where": women},
        )
        run.analysis(
            f"{name}_count",
            {
                "survey": name,
                "kind": "count",
                "where": where(("sex", "in", ["F"]), ("age", "lte", 30)),
            },
        )
        run.analysis(
            f"{name}_count_between",
            {"survey": name, "kind": "count", "where": where(("age", "between", [30, 45]))},
        )
        run.analysis(
            f"{name}_distribution", {"survey": name, "kind": "distribution", "attribute": "age"}
        )
        run.analysis(
            f"{name}_mean_of_women",
            {"survey": name, "kind": "mean", "attribute": "age", "where": women},
        )
        run.analysis(
            f"{name}_mean_of_young",
            {
                "survey": name,
                "kind": "mean",
                "attribute": "age",
                "where": where(("age", "lte", 40)),
            },
        )
        run.analysis(
            f"{name}_sample",
            {
                "survey": name,
                "kind": "sample",
                "size": 10,
                "seed": 5,
                "where": where(("age", "gt", 60)),
            },
        )
    run.report("whole_report", "whole")
    run.report("staircase_report", "staircase")
    compare("whole_years", run.cases)


def test_panels(django_capture_on_commit_callbacks: Any) -> None:
    analyst = client_for("north", "analyst")
    organisation = Organisation.objects.get(slug="north")
    exact = _exact_consultation(organisation)
    distorted = distorted_consultation(organisation, n=800, seed=1414)
    run = Recorder(
        analyst,
        django_capture_on_commit_callbacks,
        {"exact": exact.survey, "distorted": distorted.profile.pk},
    )
    body: dict[str, Any] = {
        "survey": "exact",
        "kind": "panel",
        "size": 20,
        "reserves": 4,
        "seed": 20261123,
        "where": where(("age", "gt", 17)),
        "quotas": [
            {"where": where(("sex", "in", ["F"])), "min": 9, "max": 11},
            {"where": where(("age", "between", [16, 30])), "min": 3, "max": 6},
            {"where": where(("district", "in", ["N"])), "min": 6, "max": 8},
        ],
    }
    run.analysis("exact_maximin", body, exports=True)
    for objective in ("nash", "leximin"):
        run.analysis(f"exact_{objective}", {**body, "objective": objective})
    run.analysis(
        "exact_infeasible",
        {**body, "quotas": [{"where": where(("district", "in", ["N"])), "min": 15, "max": 20}]},
    )
    run.analysis(
        "exact_small_category",
        {**body, "quotas": [{"where": where(("district", "in", ["W"])), "min": 1, "max": 2}]},
    )
    run.analysis(
        "bad_panel_strata", {**body, "strata": [{"where": where(("sex", "in", ["F"])), "size": 20}]}
    )
    run.analysis("bad_panel_method", {**body, "method": "posterior"})
    quotas = [
        {"where": where(("sex", "in", ["F"])), "min": 8, "max": 12},
        {"where": where(("age", "between", [16, 30])), "min": 3, "max": 6},
    ]
    distorted_body = {
        "survey": "distorted",
        "kind": "panel",
        "size": 20,
        "seed": 7,
        "quotas": quotas,
    }
    run.analysis("distorted_plain", distorted_body, exports=True)
    run.analysis("distorted_max_outside", {**distorted_body, "max_outside": 0.2})
    compare("panel", run.cases)


def test_changes(django_capture_on_commit_callbacks: Any) -> None:
    """Issue 29: the change kind on test_change_api's consultation (3,000 pairs)."""
    from tests.reconstruction.test_change_api import _build

    analyst = client_for("north", "analyst")
    built = _build(Organisation.objects.get(slug="north"))
    labels = ("before", "after", "profile", "elsewhere")
    run = Recorder(analyst, django_capture_on_commit_callbacks,
                   {name: built[name].pk for name in labels})  # fmt: skip
    body = {"survey": "before", "kind": "change", "after": "after", "attribute": "support"}
    run.analysis("change", body, exports=True)
    run.analysis("change_women", {**body, "where": where(("sex", "in", ["F"]))})
    run.analysis(
        "change_other_key",
        {**body, "attribute": "support_before", "after_attribute": "support_after"},
    )
    run.analysis("bad_change_same_survey", {**body, "after": "before"})
    run.analysis("bad_change_elsewhere", {**body, "after": "elsewhere"})
    run.analysis("bad_change_categories", {**body, "attribute": "mood"})
    run.analysis("bad_change_continuous", {**body, "attribute": "score"})
    run.analysis("bad_change_no_after", {k: v for k, v in body.items() if k != "after"})
    run.report("report_before", "before")
    compare("change", run.cases)
