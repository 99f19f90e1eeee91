"""Fixtures shared by the surveys tests: two organisations, their keys and surveys."""

from __future__ import annotations

import pytest
from django.core.cache import cache

from tests.factories import Tenant, consultation_factory, survey_factory, tenant_factory


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    cache.clear()  # rate-limit counters must not leak between tests


@pytest.fixture
def tenant(db: None) -> Tenant:
    return tenant_factory()


@pytest.fixture
def other_tenant(db: None) -> Tenant:
    return tenant_factory()


@pytest.fixture
def consultation(tenant: Tenant):
    return consultation_factory(tenant.organisation, title="New primary school")


@pytest.fixture
def survey(consultation):
    """An open profile survey with the api.md questions."""
    return survey_factory(consultation)


@pytest.fixture(autouse=True)
def _forget_surveys() -> None:
    """Ids are reused between tests that roll back: start with nothing remembered."""
    from surveys import selectors

    selectors._OPEN_SURVEYS.clear()
