"""The platform's edges: health, defaults that deny, schema, docs, admin, configuration."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import OperationalError
from rest_framework.test import APIClient

from config.env import ConfigurationError, database_from_url, env_bool, env_int, env_list

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.django_db
def test_healthz_reports_up_on_the_embedded_default(client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["database"]["status"] == "up"
    assert body["worker"]["mode"] == "in-process"


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_is_down(client, monkeypatch) -> None:
    from django.db import connection

    def broken_cursor(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise OperationalError("connection refused")

    monkeypatch.setattr(connection, "cursor", broken_cursor)
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["database"] == {"status": "down", "error": "OperationalError"}


@pytest.mark.django_db
def test_api_denies_unauthenticated_and_bad_keys() -> None:
    client = APIClient()
    response = client.get("/api/v1/aggregate-reconstructions/1/")
    assert response.status_code == 401
    assert "detail" in response.json()
    client.credentials(HTTP_AUTHORIZATION="Bearer abcd.nottherealkey")
    response = client.get("/api/v1/aggregate-reconstructions/1/")
    assert response.status_code == 401
    assert response.json()["detail"] == "Invalid API key."


@pytest.mark.django_db
def test_revoked_and_expired_keys_are_refused() -> None:
    from datetime import timedelta

    from django.utils import timezone

    from consultations.services import api_key_create, api_key_revoke, organisation_create

    organisation = organisation_create(slug="east", name="East")
    revoked = api_key_create(organisation=organisation, role="analyst")
    api_key_revoke(api_key=revoked.api_key)
    expired = api_key_create(
        organisation=organisation, role="analyst", expires_at=timezone.now() - timedelta(seconds=1)
    )
    for issued, reason in ((revoked, "revoked"), (expired, "expired")):
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.key}")
        response = client.get("/api/v1/aggregate-reconstructions/1/")
        assert response.status_code == 401
        assert reason in response.json()["detail"]
    assert not revoked.api_key.hashed_key.startswith(revoked.key[:8] + ".")  # stored hashed
    assert revoked.key not in revoked.api_key.hashed_key


@pytest.mark.django_db
def test_schema_docs_and_admin_are_served(client) -> None:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert schema.status_code == 200
    document = schema.json()
    assert "/api/v1/aggregate-reconstructions/" in document["paths"]
    assert "bearerAuth" in document["components"]["securitySchemes"]
    docs = client.get("/api/docs/")
    assert docs.status_code == 200 and b"swagger" in docs.content.lower()
    admin = client.get("/admin/login/")
    assert admin.status_code == 200


def test_env_helpers_name_the_bad_variable(monkeypatch) -> None:
    monkeypatch.setenv("X_FLAG", "maybe")
    with pytest.raises(ConfigurationError, match="X_FLAG"):
        env_bool("X_FLAG")
    monkeypatch.setenv("X_NUM", "ten")
    with pytest.raises(ConfigurationError, match="X_NUM"):
        env_int("X_NUM", 1)
    monkeypatch.setenv("X_LIST", "a, b,,c")
    assert env_list("X_LIST") == ["a", "b", "c"]
    assert database_from_url("postgres://u:p%40ss@db:5433/name")["PASSWORD"] == "p@ss"
    assert database_from_url("sqlite:////tmp/x.sqlite3")["NAME"] == "/tmp/x.sqlite3"
    assert database_from_url("sqlite:///var/db.sqlite3")["NAME"] == "var/db.sqlite3"
    with pytest.raises(ConfigurationError, match="scheme"):
        database_from_url("mysql://db/x")


def test_database_url_query_options_are_kept() -> None:
    """``?sslmode=require`` reaches the driver: a managed PostgreSQL refuses plain text."""
    config = database_from_url(
        "postgres://user:p%40ss@db.example.org:5432/consultations?sslmode=require&connect_timeout=5"
    )
    assert config["ENGINE"] == "django.db.backends.postgresql"
    assert (config["NAME"], config["USER"], config["PASSWORD"]) == ("consultations", "user", "p@ss")
    assert (config["HOST"], str(config["PORT"])) == ("db.example.org", "5432")
    assert config["OPTIONS"] == {"sslmode": "require", "connect_timeout": 5}
    assert config["CONN_MAX_AGE"] == 60
    assert config["CONN_HEALTH_CHECKS"] is True
    with pytest.raises(ConfigurationError, match="names no database"):
        database_from_url("postgres://user@db/")


def _manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_URL"))}
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=REPO,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_start_up_without_secret_key_fails_clearly() -> None:
    result = _manage("check", env={"DJANGO_DEBUG": "0"})
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY is required" in result.stderr


def test_deploy_checks_pass_with_production_variables(tmp_path) -> None:
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        env={
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "a-long-random-production-secret-Zq8vN3kP7xW2mR9tB4yL6cJ1hF5gD0sA",
            "DJANGO_ALLOWED_HOSTS": "consult.example.org",
            "DATABASE_URL": f"sqlite:///{tmp_path}/db.sqlite3",
        },
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


@pytest.mark.django_db
def test_a_key_revoked_after_use_is_refused_at_once() -> None:
    """Verified keys are cached for a few seconds; revoking one forgets it immediately."""
    from consultations.services import api_key_create, api_key_revoke, organisation_create

    organisation = organisation_create(slug="west", name="West")
    issued = api_key_create(organisation=organisation, role="analyst")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {issued.key}")
    assert client.get("/api/v1/analyses/").status_code == 200  # verified and cached
    api_key_revoke(api_key=issued.api_key)
    response = client.get("/api/v1/analyses/")
    assert response.status_code == 401
    assert "revoked" in response.json()["detail"]
