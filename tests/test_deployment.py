"""The docker compose deployment: valid for Compose, and shaped as the README promises."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
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


_BLAS_PROBE = (
    "import os, sys, config, numpy as np\n"
    "a = np.ones((1500, 1500)); a @ a\n"
    "print(os.environ['OPENBLAS_NUM_THREADS'], len(os.listdir('/proc/self/task')))\n"
)


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_server_processes_run_blas_on_one_thread_unless_told_otherwise() -> None:
    """Importing ``config`` (what web, worker and manage.py do first) sets OpenBLAS to one
    thread before numpy loads: a matrix product then starts no BLAS threads. An operator's
    own ``OPENBLAS_NUM_THREADS`` is kept."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    env["DJANGO_DEBUG"] = "1"
    run = subprocess.run(
        [str(REPO / ".venv/bin/python"), "-c", _BLAS_PROBE],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.split() == ["1", "1"]
    if (os.cpu_count() or 1) > 1:  # without the setting OpenBLAS starts one thread per CPU
        bare = subprocess.run(
            [str(REPO / ".venv/bin/python"), "-c", _BLAS_PROBE.replace("config, ", "")],
            cwd=REPO,
            env={**env, "OPENBLAS_NUM_THREADS": "2"},
            capture_output=True,
            text=True,
            check=True,
        )
        assert bare.stdout.split() == ["2", "2"]
    kept = subprocess.run(
        [str(REPO / ".venv/bin/python"), "-c", _BLAS_PROBE],
        cwd=REPO,
        env={**env, "OPENBLAS_NUM_THREADS": "2"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert kept.stdout.split()[0] == "2"


def test_production_refuses_the_placeholder_secret() -> None:
    """DJANGO_DEBUG off with .env.example's DJANGO_SECRET_KEY: settings refuse to load, so
    neither gunicorn nor `check --deploy` starts (issue 27; the old settings accepted it)."""
    placeholder = next(
        line.split("=", 1)[1].strip()
        for line in (REPO / ".env.example").read_text().splitlines()
        if line.startswith("DJANGO_SECRET_KEY=")
    )
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_"))}
    run = {"capture_output": True, "text": True, "check": False, "timeout": 120, "cwd": REPO}
    command = [sys.executable, "manage.py", "check", "--deploy"]
    refused = subprocess.run(
        command, env={**base, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": placeholder}, **run
    )
    assert refused.returncode != 0
    assert "placeholder" in refused.stderr
    secret = "a-real-secret-" + "k" * 50
    accepted = subprocess.run(
        command, env={**base, "DJANGO_DEBUG": "0", "DJANGO_SECRET_KEY": secret}, **run
    )
    assert "placeholder" not in accepted.stderr
