"""Lanes: every kind of work has its own Celery queue and time limits (issue 30).

docs/operators/scaling.md, "Lanes". The integration suite's worker consumes every lane
(tests/servers.py) and tests/integration/test_standby.py shows a report waiting in its
lane while an analysis runs; these check the routing table itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml
from django.conf import settings

from config.celery import app
from reconstruction import jobs
from tests.servers import LANES

REPO = Path(__file__).resolve().parent.parent


def test_every_task_is_routed_to_a_lane_a_worker_consumes() -> None:
    app.loader.import_default_modules()
    ours = sorted(name for name in app.tasks if not name.startswith("celery."))
    assert ours, "no tasks registered"
    for name in ours:
        route = settings.CELERY_TASK_ROUTES.get(name)
        assert route is not None, f"{name} has no lane: it would wait in a queue nobody reads"
        assert route["queue"] in settings.CELERY_LANE_NAMES
    assert tuple(settings.CELERY_LANE_NAMES) == LANES
    assert settings.CELERY_TASK_DEFAULT_QUEUE in LANES


def test_jobs_go_to_their_lane() -> None:
    def lane(task: str, kind: str | None = None) -> str:
        return jobs.job_lane(jobs.job_task(task, kind))

    assert lane(jobs.RUN_ANALYSIS, "count") == "analyses"
    assert lane(jobs.RUN_ANALYSIS, "sample") == "analyses"
    assert lane(jobs.RUN_ANALYSIS, "panel") == "panels"
    assert lane(jobs.RUN_REPORT) == "reports"
    assert lane(jobs.RUN_AGGREGATE_RECONSTRUCTION) == "analyses"
    assert lane("webhooks.deliver") == "webhooks"
    # Each task carries its lane's limits to whichever worker runs it.
    for task, route in settings.CELERY_TASK_ROUTES.items():
        limits = settings.CELERY_LANES[route["queue"]]
        assert settings.CELERY_TASK_ANNOTATIONS[task] == {
            "soft_time_limit": limits["soft_time_limit"],
            "time_limit": limits["time_limit"],
        }


def test_webhook_deliveries_have_short_limits_of_their_own() -> None:
    lanes = settings.CELERY_LANES
    assert lanes["webhooks"]["time_limit"] < lanes["analyses"]["time_limit"]
    deliver = settings.CELERY_TASK_ANNOTATIONS["webhooks.deliver"]
    assert deliver["time_limit"] == lanes["webhooks"]["time_limit"]
    assert deliver["soft_time_limit"] == lanes["webhooks"]["soft_time_limit"]


def _settings_in_a_process(env: dict[str, str], expression: str) -> subprocess.CompletedProcess:
    code = f"import django; django.setup(); from django.conf import settings; print({expression})"
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env={**os.environ, "DJANGO_DEBUG": "1", **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_lane_limits_and_kind_lanes_come_from_the_environment() -> None:
    done = _settings_in_a_process(
        {
            "CELERY_PANELS_SOFT_TIME_LIMIT": "900",
            "CELERY_PANELS_TIME_LIMIT": "960",
            "ANALYSIS_KIND_LANES": "sample:panels",
        },
        "settings.CELERY_LANES['panels'], settings.ANALYSIS_KIND_LANES, "
        "settings.CELERY_BROKER_TRANSPORT_OPTIONS['visibility_timeout'], "
        "settings.JOBS_LEASE_SECONDS",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "{'soft_time_limit': 900, 'time_limit': 960} "
        "{'panel': 'panels', 'sample': 'panels'} 1260 1020"
    )


def test_a_lane_limit_the_visibility_timeout_would_cut_short_is_refused() -> None:
    done = _settings_in_a_process(
        {"CELERY_REPORTS_TIME_LIMIT": "2000", "CELERY_VISIBILITY_TIMEOUT": "1000"}, "1"
    )
    assert done.returncode != 0
    assert "CELERY_VISIBILITY_TIMEOUT must be longer than every lane" in done.stderr
    unknown = _settings_in_a_process({"ANALYSIS_KIND_LANES": "panel:fast"}, "1")
    assert unknown.returncode != 0
    assert "ANALYSIS_KIND_LANES: 'panel:fast': an analysis kind runs in" in unknown.stderr


def test_compose_runs_a_worker_per_lane_or_one_on_all_lanes() -> None:
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    for lane in LANES:
        command = services[f"worker-{lane}"]["command"]
        assert command[command.index("-Q") + 1] == lane
        assert f"--concurrency=${{CELERY_{lane.upper()}_CONCURRENCY:-" in command[-1]
        assert "profiles" not in services[f"worker-{lane}"]
    small = services["worker"]
    assert small["profiles"] == ["small"]
    assert small["command"][small["command"].index("-Q") + 1].split(",") == list(LANES)


def test_a_panel_solves_within_its_own_lanes_soft_limit() -> None:
    """The panel's solver stops at three quarters of the panels lane's soft limit (so a
    long panel ends with a valid lottery), not the analyses' limit."""
    from django.test import override_settings

    from reconstruction.kinds import panel as panels

    lanes = {**settings.CELERY_LANES, "panels": {"soft_time_limit": 800, "time_limit": 860}}
    with override_settings(CELERY_LANES=lanes, CELERY_TASK_SOFT_TIME_LIMIT=300):
        assert panels.solver_seconds() == 600.0


def test_a_worker_imports_what_the_first_report_needs_before_its_pool_forks() -> None:
    """The first report of a fresh worker would otherwise import matplotlib, pandas and
    openpyxl on its analyst's time (1-2 s): the worker's start does it
    (config.celery.preload on Celery's worker_init), once, in the main process."""
    probe = (
        "import sys\n"
        "from celery.signals import worker_init\n"
        "import config.celery\n"
        "heavy = ('matplotlib.figure', 'pandas', 'openpyxl')\n"
        "assert not any(m in sys.modules for m in heavy), [m for m in heavy if m in sys.modules]\n"
        "worker_init.send(sender=None)\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "DJANGO_DEBUG": "1", "DJANGO_SETTINGS_MODULE": "config.settings"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "['matplotlib.figure', 'openpyxl', 'pandas']"


def test_the_web_application_imports_its_views_when_it_is_loaded() -> None:
    """gunicorn loads config/wsgi.py once, in its master (preload_app), and forks the
    workers from it: the views and the analysis path they import are loaded there, not
    on each worker's first request (which then took 1-2 s)."""
    probe = (
        "import sys\n"
        "import config.wsgi\n"
        "print(all(m in sys.modules for m in ('reconstruction.apis', 'reconstruction.pipeline')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "DJANGO_DEBUG": "1", "DJANGO_SETTINGS_MODULE": "config.settings"},
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "True"
