"""The production image, without Docker: the Dockerfile's build steps and command, as written.

The test reads ``Dockerfile``, runs its ``collectstatic`` step exactly as written (production
settings, so the static files' manifest is written), starts its ``CMD`` (gunicorn with
``config/gunicorn.py``) with the environment ``docker-compose.yml`` gives the ``web``
service filled in from ``.env.example`` (only the database, broker and cache addresses point
at the real servers of tests/servers.py), and checks what an operator and a resident see:
the admin login page, the API docs and the example portal page answer 200 and every static
file they reference loads, and the compose health check's exact command passes with
``.env.example``'s ``DJANGO_ALLOWED_HOSTS``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
import yaml

from consultations.services import api_key_create, consultation_create, organisation_create
from surveys.services import survey_create, survey_open
from tests.servers import Worker, free_port

pytestmark = [pytest.mark.integration, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
STATIC_REFERENCE = re.compile(
    r"""(?:href|src)=["'](/static/[^"']+)["']|from\s+["'](/static/[^"']+)["']"""
)


def dockerfile_instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined."""
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    instructions = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            instructions.append((word.upper(), rest.strip()))
    return instructions


def dotenv(path: Path) -> dict[str, str]:
    values = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip()
    return values


def compose_environment(service: dict, env_file: dict[str, str]) -> dict[str, str]:
    """The service's environment with ``${VAR}``, ``${VAR:-default}``, ``${VAR:?msg}`` filled."""

    def substitute(match: re.Match[str]) -> str:
        name, op, rest = match.group(1), match.group(2), match.group(3)
        value = env_file.get(name, "")
        if op == ":-" and not value:
            return rest
        if op == ":?" and not value:
            raise AssertionError(f"{name} is required by docker-compose.yml: {rest}")
        return value

    pattern = re.compile(r"\$\{(\w+)(?:(:-|:\?)([^}]*))?\}")
    return {
        name: pattern.sub(substitute, str(value)) for name, value in service["environment"].items()
    }


@pytest.fixture
def production_server(tmp_path: Path, celery_worker_process: Worker) -> Iterator[dict]:
    instructions = dockerfile_instructions()
    image_env: dict[str, str] = {}
    for word, rest in instructions:
        if word == "ENV":
            image_env.update(item.split("=", 1) for item in shlex.split(rest))
    (collectstatic,) = [
        rest.split("&&")[0]
        for word, rest in instructions
        if word == "RUN" and "collectstatic" in rest
    ]
    (command,) = [json.loads(rest) for word, rest in instructions if word == "CMD"]
    assert image_env.get("DJANGO_DEBUG") == "0"

    static_root = tmp_path / "staticfiles"
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PORTAL_"))}
    base_env.update(image_env)
    base_env.update(PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    base_env["DJANGO_STATIC_ROOT"] = str(static_root)
    build = subprocess.run(
        ["sh", "-c", collectstatic], cwd=REPO, env=base_env, capture_output=True, text=True
    )
    assert build.returncode == 0, build.stderr[-3000:]
    assert (static_root / "staticfiles.json").is_file(), "collectstatic wrote no manifest"

    # What a portal needs: an organisation, an open survey, a portal key for the example page.
    organisation = organisation_create(slug="prod-town", name="Production Town")
    consultation = consultation_create(organisation=organisation, title="Library hours")
    survey = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="opinion",
        title="Opening hours",
        questions=[
            {
                "key": "evenings",
                "type": "binary",
                "categories": ["yes", "no"],
                "mechanism": {"name": "randomised_response", "retain": 0.75},
            }
        ],
    )
    survey = survey_open(survey=survey)
    draft = survey_create(
        organisation=organisation,
        consultation=consultation,
        kind="opinion",
        title="Draft",
        questions=[
            {"key": "q", "type": "binary", "categories": ["a", "b"], "mechanism": {"name": "none"}}
        ],
    )
    portal_key = api_key_create(organisation=organisation, role="portal").key

    dotenv_values = dotenv(REPO / ".env.example")
    spec = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    web = spec["services"]["web"]
    env = dict(base_env)
    env.update(compose_environment(web, dotenv_values))
    assert env["DJANGO_DEBUG"] == "0"
    port = free_port()
    env.update(
        # The servers of tests/servers.py stand in for the compose services db and redis.
        DATABASE_URL=os.environ["DATABASE_URL"],
        CELERY_BROKER_URL=os.environ["CELERY_BROKER_URL"],
        CACHE_URL=os.environ["CACHE_URL"],
        VAR_DIR=str(tmp_path / "var"),
        GUNICORN_BIND=f"127.0.0.1:{port}",
        GUNICORN_WORKERS="1",
        PORTAL_EXAMPLE_ENABLED="1",
        PORTAL_EXAMPLE_KEY=portal_key,
        PROMETHEUS_MULTIPROC_DIR=str(tmp_path / "prometheus"),
        # .env.example's secret is a public placeholder that production refuses (issue 27):
        # an operator sets their own, as here.
        DJANGO_SECRET_KEY="integration-" + "s3cr3t" * 10,
    )
    assert web["command"] == command, "compose runs the image's command"
    log = tmp_path / "gunicorn.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(VENV_BIN / command[0]), *command[1:]],
            cwd=REPO,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    healthcheck = web["healthcheck"]["test"]
    assert healthcheck[0] == "CMD"
    try:
        deadline = time.monotonic() + 60
        while True:
            probe = subprocess.run(
                healthcheck[1:], cwd=REPO, env=env, capture_output=True, text=True
            )
            if probe.returncode == 0:
                break
            assert process.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, probe.stderr + log.read_text()[-3000:]
            time.sleep(0.5)
        yield {
            "url": f"http://127.0.0.1:{port}",
            "host": dotenv_values["DJANGO_ALLOWED_HOSTS"].split(",")[0],
            "survey": survey,
            "draft": draft,
            "healthcheck": healthcheck[1:],
            "env": env,
            "log": log,
            "metrics_token": dotenv_values["METRICS_TOKEN"],
        }
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=30)


def get(server: dict, path: str, **kwargs: object) -> requests.Response:
    # As the TLS-terminating proxy forwards it: the public host name, X-Forwarded-Proto.
    headers = {"Host": server["host"], "X-Forwarded-Proto": "https"}
    return requests.get(server["url"] + path, headers=headers, timeout=30, allow_redirects=False)


def assert_page_and_static_files_load(server: dict, path: str) -> list[str]:
    page = get(server, path)
    assert page.status_code == 200, (path, page.status_code, server["log"].read_text()[-3000:])
    static = sorted({a or b for a, b in STATIC_REFERENCE.findall(page.text)})
    assert static, f"{path} references no static file"
    for url in static:
        asset = get(server, url)
        assert asset.status_code == 200, (path, url, asset.status_code)
        assert asset.content, url
        # Served from the manifest: the file name carries its content hash.
        assert re.search(r"\.[0-9a-f]{12}\.\w+$", url), url
    return static


def test_the_image_serves_and_its_health_check_passes(production_server: dict) -> None:
    """One server for both checks: the build step (collectstatic) is the slow part."""
    check_pages_and_static_files(production_server)
    check_health_check_with_the_example_hosts(production_server)
    check_metrics(production_server)


def check_pages_and_static_files(production_server: dict) -> None:
    admin = assert_page_and_static_files_load(production_server, "/admin/login/")
    assert any(url.startswith("/static/admin/css/base.") for url in admin)
    docs = assert_page_and_static_files_load(production_server, "/api/docs/")
    assert any("swagger-ui" in url for url in docs)
    survey = production_server["survey"]
    portal = assert_page_and_static_files_load(production_server, f"/portal-example/{survey.pk}/")
    assert any(url.startswith("/static/privacy/distort.") for url in portal)
    # Production really is production: no debug page, the draft is not served.
    missing = get(production_server, f"/portal-example/{production_server['draft'].pk}/")
    assert missing.status_code == 404
    assert "Traceback" not in missing.text


def check_health_check_with_the_example_hosts(production_server: dict) -> None:
    probe = subprocess.run(
        production_server["healthcheck"],
        cwd=REPO,
        env=production_server["env"],
        capture_output=True,
        text=True,
    )
    assert probe.returncode == 0, probe.stderr
    # What the README's `curl localhost:8000/healthz` sees: the host is not an allowed one.
    port = production_server["url"].rsplit(":", 1)[1]
    health = requests.get(f"http://localhost:{port}/healthz", timeout=30)
    assert health.status_code == 200, health.text
    body = health.json()
    assert body["database"]["vendor"] == "postgresql"
    assert body["worker"]["status"] == "up"
    # Other paths still refuse hosts that are not allowed.
    refused = requests.get(f"http://localhost:{port}/admin/login/", timeout=30)
    assert refused.status_code == 400


def check_metrics(production_server: dict) -> None:
    """.env.example turns metrics on: Prometheus scrapes the internal address with the token."""
    port = production_server["url"].rsplit(":", 1)[1]
    url = f"http://localhost:{port}/metrics"
    assert requests.get(url, timeout=30).status_code == 401
    token = production_server["metrics_token"]
    scraped = requests.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=30)
    assert scraped.status_code == 200, scraped.text[:2000]
    text = scraped.text
    # Requests counted in the worker processes (multiprocess mode) and the queue read.
    assert 'django_http_responses_total_by_status_total{status="200"}' in text
    assert "django_http_requests_latency_seconds_by_view_method_bucket" in text
    assert "consultations_queue_length" in text
    assert "consultations_jobs_queued" in text
