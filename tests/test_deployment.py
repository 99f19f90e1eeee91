"""The docker compose deployment: valid for Compose, and shaped as the README promises."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.servers import ServerUnavailable, apt_install

REPO = Path(__file__).resolve().parent.parent
COMPOSE = REPO / "docker-compose.yml"


def _compose_command() -> list[str]:
    """`docker compose` where the plugin exists, else Debian's docker-compose (installed)."""
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose") is None:
        try:
            apt_install("docker-compose")
        except ServerUnavailable as exc:
            pytest.fail(f"No Compose implementation to validate docker-compose.yml: {exc}")
    return ["docker-compose"]


def test_compose_file_is_valid(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text((REPO / ".env.example").read_text())
    result = subprocess.run(
        [
            *_compose_command(),
            "--project-directory",
            str(REPO),
            "--env-file",
            str(env_file),
            "-f",
            str(COMPOSE),
            "config",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "POSTGRES_"))},
    )
    assert result.returncode == 0, result.stderr


def test_compose_file_refuses_to_start_without_secrets(tmp_path: Path) -> None:
    empty = tmp_path / ".env"
    empty.write_text("")
    result = subprocess.run(
        [
            *_compose_command(),
            "--project-directory",
            str(REPO),
            "--env-file",
            str(empty),
            "-f",
            str(COMPOSE),
            "config",
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "POSTGRES_"))},
    )
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY" in result.stderr or "POSTGRES_PASSWORD" in result.stderr


def test_compose_describes_the_production_stack() -> None:
    spec = yaml.safe_load(COMPOSE.read_text())
    services = spec["services"]
    assert {"db", "redis", "web", "worker", "beat"} <= set(services)
    for name in ("db", "redis", "web", "worker", "beat"):
        assert "healthcheck" in services[name], name
    assert "--appendonly" in services["redis"]["command"]
    assert "yes" in services["redis"]["command"]
    assert "gunicorn" in services["web"]["command"]
    assert services["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]
    assert {"pgdata", "redisdata", "reports"} <= set(spec["volumes"])
    assert services["web"]["environment"]["DJANGO_DEBUG"] == "0"
