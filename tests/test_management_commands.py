"""Smoke tests of the management commands api.md and the README name.

``create_organisation`` and ``create_api_key`` run in-process and are checked by their
effect: the printed key authenticates against the API with its role, once stored hashed.
``demo`` runs as ``make demo`` does (``manage.py migrate`` then ``manage.py demo``) in a
subprocess on a fresh SQLite file in a temporary VAR_DIR, at its smallest size.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from consultations.models import ApiKey, Organisation

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_create_organisation_and_api_keys_that_work() -> None:
    printed = _run("create_organisation", "leeds", "--name", "Leeds City Council")
    organisation = Organisation.objects.get(slug="leeds")
    assert organisation.name == "Leeds City Council"
    assert f"id {organisation.pk}" in printed

    keys = {}
    for role in ("analyst", "portal"):
        printed = _run("create_api_key", "--organisation", "leeds", "--role", role)
        lines = printed.strip().splitlines()
        assert lines[-2] == "Key (shown once, store it now):", printed
        keys[role] = lines[-1]
        stored = ApiKey.objects.get(organisation=organisation, role=role)
        assert stored.prefix in lines[0]
        assert keys[role] not in {stored.hashed_key, stored.prefix}  # stored hashed only

    analyst, portal, nobody = APIClient(), APIClient(), APIClient()
    analyst.credentials(HTTP_AUTHORIZATION=f"Bearer {keys['analyst']}")
    portal.credentials(HTTP_AUTHORIZATION=f"Bearer {keys['portal']}")
    nobody.credentials(HTTP_AUTHORIZATION="Bearer not-a-key")
    created = analyst.post("/api/v1/consultations/", {"title": "Park"}, format="json")
    assert created.status_code == 201, created.content
    assert (
        portal.post("/api/v1/consultations/", {"title": "Park"}, format="json").status_code == 403
    )
    assert nobody.get("/api/v1/consultations/").status_code in (401, 403)


@pytest.mark.django_db
def test_create_api_key_with_an_expiry() -> None:
    _run("create_organisation", "york", "--name", "York")
    printed = _run(
        "create_api_key", "--organisation", "york", "--role", "portal", "--expires-in-days", "30"
    )
    assert ", expires " in printed
    assert ApiKey.objects.get(organisation__slug="york").expires_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("create_api_key", "--organisation", "nowhere", "--role", "portal"), "nowhere"),
        (("create_organisation", "Bad Slug!", "--name", "x"), "slug"),
    ],
)
def test_commands_refuse_bad_input_clearly_and_store_nothing(
    args: tuple[str, ...], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        _run(*args)
    assert not ApiKey.objects.exists()
    assert not Organisation.objects.filter(slug="Bad Slug!").exists()


def test_demo_runs_end_to_end_on_a_fresh_sqlite(tmp_path: Path) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "CACHE_URL", "INTEGRATION_SERVICES"}
    }
    env.update(DJANGO_DEBUG="1", VAR_DIR=str(tmp_path))
    manage = [sys.executable, str(REPO / "manage.py")]
    migrate = subprocess.run(
        [*manage, "migrate", "--verbosity", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert migrate.returncode == 0, migrate.stderr[-3000:]
    demo = subprocess.run(
        [*manage, "demo", "--residents", "2000", "--seed", "3"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert demo.returncode == 0, (demo.stdout[-3000:], demo.stderr[-3000:])
    assert "Traceback" not in demo.stderr, demo.stderr[-3000:]
    # The comparison table is printed; at 2,000 residents disclosure control refuses or
    # suppresses some results, which the demo shows as "not published" and goes on.
    table = demo.stdout[demo.stdout.index("quantity") : demo.stdout.index("Deliberation")]
    rows = [line for line in table.splitlines()[2:] if line.strip() and not line.startswith("[")]
    assert len(rows) >= 10, table
    assert rows[0].startswith("count: F, age <= 30, children"), table
    for row in rows:
        assert "not published" in row or "%" in row, row
    # The deliberation step (issue 29): the panel's change, true beside reconstructed.
    change = demo.stdout[demo.stdout.index("before -> after") : demo.stdout.index("Admin site")]
    cells = [line for line in change.splitlines() if " -> " in line][1:]
    assert len(cells) == 9, change
    for line in cells:
        assert "not published" in line or "[" in line, line
    assert "toward for" in change and "panel members answered both surveys" in demo.stdout
    reports = list((tmp_path / "reports").glob("*.html"))
    assert reports, (demo.stdout[-3000:], sorted(p.name for p in tmp_path.rglob("*")))
    assert "<html" in reports[0].read_text(errors="replace").lower()
    assert (tmp_path / "db.sqlite3").exists()
    # The local admin login it prints works (a superuser on the embedded default).
    username = re.search(r"^  username  (\S+)$", demo.stdout, re.M)
    password = re.search(r"^  password  (\S+)", demo.stdout, re.M)
    assert username and password, demo.stdout[-2000:]
    check = subprocess.run(
        [*manage, "shell", "-c",
         "from django.contrib.auth import authenticate; "
         f"u = authenticate(username={username[1]!r}, password={password[1]!r}); "
         "print('login', bool(u and u.is_superuser and u.is_staff))"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "login True" in check.stdout, (check.stdout, check.stderr[-2000:])


@pytest.mark.django_db
def test_the_demo_admin_login_is_made_only_on_the_embedded_default(settings) -> None:
    """No password is ever printed for a database other than the local SQLite file: with
    debug off (a deployment) the demo makes no login; on the embedded default it makes a
    superuser whose password changes on every run."""
    from django.contrib.auth import get_user_model

    from config.management.commands.demo import demo_admin_login

    settings.DEBUG = False
    assert demo_admin_login() is None
    assert not get_user_model().objects.filter(username="demo-admin").exists()
    settings.DEBUG = True
    first = demo_admin_login()
    second = demo_admin_login()
    assert first and second and first[0] == second[0] == "demo-admin" and first[1] != second[1]
    user = get_user_model().objects.get(username="demo-admin")
    assert user.is_superuser and user.check_password(second[1])
    assert not user.check_password(first[1])


def test_the_demos_calibration_always_gives_a_channel_the_product_accepts() -> None:
    """`make demo` uploads 2,000 calibration pairs drawn from its residents' behaviour;
    the estimated manual-negative channel must be invertible whatever the draw.

    With far-off answers weighted by distance**1.5 (condition 18.7) one draw of the demo's
    stream gave an estimate of condition 2,450 and `make demo` failed at its default size;
    the end-to-end test above runs a smaller demo and did not see it.
    """
    import numpy as np

    from config.management.commands.demo import ATTENDANCE, manual_negative_choice
    from privacy.mechanisms.channels import MAX_CONDITION, channel_conditioning, manual_negative

    k = len(ATTENDANCE)
    worst = 0.0
    for seed in range(300):
        rng = np.random.default_rng(seed)
        true = rng.integers(0, k, size=2000)
        pairs = np.column_stack([true, manual_negative_choice(true, k, rng)])
        conditioning = channel_conditioning(manual_negative(k, pairs))
        assert conditioning.problem is None, (seed, conditioning.condition)
        worst = max(worst, conditioning.condition)
    assert worst < MAX_CONDITION / 4, worst
