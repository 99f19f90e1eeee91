"""Plain factories for the domain (factory_boy is not a dependency).

Everything is created through the services, as the demo and the API do.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from rest_framework.test import APIClient

from consultations.models import ApiKey, Consultation, Organisation
from consultations.services import api_key_create, consultation_create, organisation_create
from surveys.models import Survey
from surveys.services import survey_create, survey_open

_sequence = itertools.count(1)


def organisation_factory(slug: str | None = None) -> Organisation:
    number = next(_sequence)
    return organisation_create(slug=slug or f"org-{number}", name=f"Organisation {number}")


def key_factory(organisation: Organisation, role: str = "analyst") -> tuple[ApiKey, str]:
    issued = api_key_create(organisation=organisation, role=role, name=f"{role} key")
    return issued.api_key, issued.key


def client_for(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


def consultation_factory(organisation: Organisation, **kwargs: Any) -> Consultation:
    kwargs.setdefault("title", f"Consultation {next(_sequence)}")
    return consultation_create(organisation=organisation, **kwargs)


def profile_questions() -> list[dict[str, Any]]:
    """The api.md example: every mechanism once."""
    return [
        {
            "key": "sex",
            "text": "Sex",
            "type": "binary",
            "categories": ["F", "M"],
            "mechanism": {"name": "randomised_response", "retain": 0.7},
        },
        {
            "key": "district",
            "type": "nominal",
            "categories": ["N", "S", "E", "W", "C"],
            "mechanism": {
                "name": "randomised_response",
                "matrix": [
                    [0.6, 0.1, 0.1, 0.1, 0.1],
                    [0.1, 0.6, 0.1, 0.1, 0.1],
                    [0.1, 0.1, 0.6, 0.1, 0.1],
                    [0.1, 0.1, 0.1, 0.6, 0.1],
                    [0.1, 0.1, 0.1, 0.1, 0.6],
                ],
            },
        },
        {
            "key": "satisfaction",
            "type": "ordinal",
            "categories": ["1", "2", "3", "4", "5"],
            "mechanism": {"name": "negative_uniform"},
        },
        {
            "key": "site",
            "type": "ordinal",
            "categories": ["A", "B", "C", "D", "E", "F", "G"],
            "mechanism": {"name": "negative_gaussian", "sigma": 1.5},
        },
        {
            "key": "skips_class",
            "type": "ordinal",
            "categories": ["never", "rarely", "often", "always"],
            "mechanism": {"name": "negative_manual"},
        },
        {
            "key": "age",
            "type": "continuous",
            "range": [16, 100],
            "mechanism": {"name": "additive_uniform", "half_width": 10},
        },
        {
            "key": "income",
            "type": "continuous",
            "range": [0, 20000],
            "mechanism": {"name": "additive_gaussian", "sigma": 800},
        },
        {
            "key": "tenure",
            "type": "binary",
            "categories": ["own", "rent"],
            "mechanism": {"name": "none"},
        },
    ]


def seven_questions() -> list[dict[str, Any]]:
    """Seven questions (the benchmark's shape)."""
    return profile_questions()[:7]


def survey_factory(
    consultation: Consultation,
    *,
    kind: str = "profile",
    questions: list[dict[str, Any]] | None = None,
    open_it: bool = True,
    title: str = "Survey",
) -> Survey:
    survey = survey_create(
        organisation=consultation.organisation,
        consultation=consultation,
        kind=kind,
        title=title,
        questions=profile_questions() if questions is None else questions,
        actor="tests",
    )
    if open_it:
        survey = survey_open(survey=survey, actor="tests")
    return survey


def good_answers(index: int = 0) -> dict[str, Any]:
    """A valid answer set for :func:`profile_questions`."""
    return {
        "sex": "FM"[index % 2],
        "district": "NSEWC"[index % 5],
        "satisfaction": "12345"[index % 5],
        "site": "ABCDEFG"[index % 7],
        "skips_class": ["never", "rarely", "often", "always"][index % 4],
        "age": 16.0 + (index % 90),
        "income": 1000.0 + (10 * index) % 19_000,
        "tenure": ["own", "rent"][index % 2],
    }


@dataclass
class Tenant:
    """An organisation with an analyst and a portal key and their clients."""

    organisation: Organisation
    analyst_key: ApiKey
    portal_key: ApiKey
    analyst: APIClient
    portal: APIClient


def tenant_factory() -> Tenant:
    organisation = organisation_factory()
    analyst_key, analyst_secret = key_factory(organisation, "analyst")
    portal_key, portal_secret = key_factory(organisation, "portal")
    return Tenant(
        organisation=organisation,
        analyst_key=analyst_key,
        portal_key=portal_key,
        analyst=client_for(analyst_secret),
        portal=client_for(portal_secret),
    )
