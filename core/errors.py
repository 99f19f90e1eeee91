"""Domain errors raised by the services of every app (surveys, consultations, reconstruction).

They carry a one-line ``detail`` and an ``errors`` mapping naming the offending field or
item, and know nothing about HTTP: the API layer maps them to 400 / 404 / 409 / 410.
"""

from __future__ import annotations

from typing import Any


class SurveyDomainError(Exception):
    """``code``: a stable machine-readable reason where clients act on it (e.g.
    ``privacy_budget``); the API adds it to the error body."""

    def __init__(
        self, detail: str, errors: dict[str, Any] | None = None, *, code: str | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.errors = errors or {}
        self.code = code


class InvalidInput(SurveyDomainError):
    """Input that can never be accepted as it is (HTTP 400)."""


class Conflict(SurveyDomainError):
    """Input that clashes with what is stored: a second response, a state change (HTTP 409)."""


class NotFound(SurveyDomainError):
    """A referenced object does not exist in this scope (HTTP 404)."""


class Gone(SurveyDomainError):
    """The data a request needs were deleted for good, e.g. purged answers (HTTP 410)."""


class QuotaExceeded(SurveyDomainError):
    """Too much work already under way for this caller; retry later (HTTP 429)."""

    def __init__(
        self, detail: str, errors: dict[str, Any] | None = None, *, retry_after: int = 60
    ) -> None:
        super().__init__(detail, errors)
        self.retry_after = retry_after
