"""The API answers JSON even where Django answers first (issue 13: bad input is a JSON 4xx).

A path under ``/api/v1/`` that no route matches (``/analyses/-3/``, ``/reports/abc/``:
the ``<int:...>`` converters refuse them before any view runs) got Django's HTML 404
page. Here such an answer becomes the API's error shape.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import translation

from core.i18n import supported_language


class JsonApiErrors:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            request.path.startswith("/api/v1/")
            and 400 <= response.status_code < 500
            and not response.get("Content-Type", "").startswith("application/json")
            and not response.streaming
            and response.status_code in (400, 404, 405, 413)
        ):
            detail = {
                400: "Bad request.",
                404: "Not found: no such URL in the API (ids are positive integers).",
                405: "Method not allowed.",
                413: "The request body is too large.",
            }[response.status_code]
            return JsonResponse({"detail": detail, "errors": {}}, status=response.status_code)
        return response


class QueryLanguage:
    """``?lang=de`` chooses the language of any page or API answer (after LocaleMiddleware,
    which reads Accept-Language and the admin's cookie): error messages, job reasons,
    reports. An unsupported code is ignored."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        requested = request.GET.get("lang")
        if requested:
            supported = {code for code, _name in settings.LANGUAGES}
            code = supported_language(requested)
            if code in supported and code.split("-")[0] == requested.lower()[:2]:
                translation.activate(code)
                request.LANGUAGE_CODE = code
        return self.get_response(request)
