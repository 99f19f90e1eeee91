"""Suite-wide test configuration.

Integration tests (``-m integration``) run only inside ``python -m tests.servers``
(``make test`` does that), which provides a real PostgreSQL and Redis. Selecting
them without those servers is an error, never a silent skip.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

INTEGRATION = os.environ.get("INTEGRATION_SERVICES") == "1"

LOCALE = Path(__file__).resolve().parents[1] / "locale"


def pytest_configure(config: pytest.Config) -> None:
    """Compile the translation catalogues when a .mo is missing or older than its .po.

    The .po files are the only source and the .mo files are not committed: `make test`
    builds them with msgfmt, this covers a bare `pytest` (and a worktree just rebased onto
    a branch that changed a .po). Written atomically, as parallel runs may race here."""
    import polib

    for po_path in sorted(LOCALE.glob("*/LC_MESSAGES/django.po")):
        mo_path = po_path.with_suffix(".mo")
        if not mo_path.exists() or mo_path.stat().st_mtime < po_path.stat().st_mtime:
            partial = mo_path.with_name(f".{mo_path.name}.{os.getpid()}")
            polib.pofile(str(po_path)).save_as_mofile(str(partial))
            os.replace(partial, mo_path)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    needs_servers = [item.nodeid for item in items if item.get_closest_marker("integration")]
    if needs_servers and not INTEGRATION:
        raise pytest.UsageError(
            "These tests need a real PostgreSQL, Redis and Celery worker: run them with "
            "`make test`, or `python -m tests.servers -- pytest -m integration`. First: "
            + needs_servers[0]
        )


if INTEGRATION:

    @pytest.fixture(scope="session")
    def django_db_setup(django_db_blocker: object) -> None:
        """Use the fresh database tests/servers.py created: migrate it, no test copy."""
        from django.core.management import call_command

        with django_db_blocker.unblock():  # type: ignore[attr-defined]
            call_command("migrate", verbosity=0)


@pytest.fixture(autouse=True)
def _admin_second_factor_off(settings: Any) -> None:
    """The suite's superusers sign in with a password; production asks them for a TOTP
    code (ADMIN_2FA=superusers, config/signin.py), which tests/test_staff_signin.py sets
    back and checks."""
    settings.ADMIN_2FA = "off"


@pytest.fixture(autouse=True)
def _forget_cached_surveys() -> None:
    """Start each test without the per-process survey caches of surveys/selectors.py.

    They are keyed by survey id, which never repeats in production (sequences), but
    rolled-back test transactions hand the same ids to different surveys.
    """
    from surveys import selectors

    selectors._OPEN_SURVEYS.clear()
    selectors._FORMS.clear()
    selectors._SCHEMES.clear()
    selectors._RENDERED.clear()


@pytest.fixture(autouse=True)
def _no_webhook_sender_thread() -> Iterator[None]:
    """The embedded default sends webhook deliveries from a thread of its own
    (webhooks/sender.py); in the tests, whose transactions that thread cannot see, the
    tests send them (tests/webhooks). A test that wants the thread overrides this."""
    from django.test import override_settings

    with override_settings(WEBHOOKS_EMBEDDED_SENDER=False):
        yield


@pytest.fixture(autouse=True)
def _default_language() -> Iterator[None]:
    """End each test in the default language: a request with ``Accept-Language`` or
    ``?lang=`` leaves its language active in the thread (LocaleMiddleware activates, nothing
    deactivates), and a later test reading messages outside a request would see it."""
    yield
    from django.utils import translation

    translation.deactivate()
