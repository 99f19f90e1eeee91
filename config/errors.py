"""One error shape for the whole API: ``{"detail": "...", "errors": {...}}``.

The one place where domain errors become HTTP: the services raise
:mod:`core.errors` exceptions (and their subclasses, e.g.
``reconstruction.analysis.AnalysisInputError``) that know nothing about HTTP; here
:class:`~core.errors.InvalidInput` becomes 400, :class:`~core.errors.NotFound` 404,
:class:`~core.errors.Conflict` 409 and :class:`~core.errors.Gone` 410, like DRF's own
exceptions and Django's ``ValidationError``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.errors import Conflict, Gone, InvalidInput, NotFound, QuotaExceeded


class ConflictError(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = gettext_lazy("The request conflicts with what is stored.")
    default_code = "conflict"


class GoneError(exceptions.APIException):
    status_code = status.HTTP_410_GONE
    default_detail = gettext_lazy("What this request needs was deleted for good.")
    default_code = "gone"


def to_api_exception(exc: Exception) -> Exception:
    """A domain error as the DRF exception of its HTTP status (others unchanged)."""
    if isinstance(exc, InvalidInput):
        error = exceptions.ValidationError(exc.errors or {"non_field_errors": [exc.detail]})
        error.summary = exc.detail  # type: ignore[attr-defined]  (read below)
        return error
    if isinstance(exc, Conflict):
        body = {"detail": exc.detail, "errors": exc.errors}
        if exc.code:
            body["code"] = exc.code
        return ConflictError(body)
    if isinstance(exc, Gone):
        return GoneError({"detail": exc.detail, "errors": exc.errors})
    if isinstance(exc, NotFound):
        return exceptions.NotFound({"detail": exc.detail, "errors": exc.errors})
    if isinstance(exc, QuotaExceeded):
        return exceptions.Throttled(wait=exc.retry_after, detail=exc.detail)
    return exc


def _summary(errors: Any) -> str:
    """A one-line description naming the first offending field or item."""
    if isinstance(errors, dict) and errors:
        field, problem = next(iter(errors.items()))
        inner = _summary(problem)
        return f"{field}: {inner}" if field != "non_field_errors" else inner
    if isinstance(errors, list) and errors:
        return _summary(errors[0])
    return str(errors)


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"


def _too_large() -> PayloadTooLarge:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return PayloadTooLarge(
        _(
            "The request body is larger than the limit of %(limit)s bytes "
            "(DJANGO_MAX_REQUEST_BYTES); send fewer responses per request."
        )
        % {"limit": limit}
    )


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    exc = to_api_exception(exc)
    if isinstance(exc, (RequestDataTooBig, TooManyFieldsSent)):
        exc = _too_large()  # Django would answer with an HTML 400
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(exc, exceptions.ValidationError):
        errors = data if isinstance(data, dict) else {"non_field_errors": data}
        detail = getattr(exc, "summary", None) or _("Invalid input: %(problem)s") % {
            "problem": _summary(errors)
        }
        response.data = {"detail": str(detail), "errors": errors}
    elif isinstance(data, dict) and "detail" in data:
        body = {"detail": str(data["detail"]), "errors": data.get("errors", {})}
        if "code" in data:  # a domain error's stable reason (core.errors.SurveyDomainError)
            body["code"] = str(data["code"])
        response.data = body
    else:
        response.data = {"detail": str(data), "errors": {}}
    if response.status_code == status.HTTP_429_TOO_MANY_REQUESTS and "Retry-After" not in response:
        response["Retry-After"] = "1"
    return response
