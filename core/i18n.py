"""The language a page or download is rendered in: ``?lang=`` first, then what
LocaleMiddleware found (Accept-Language, the admin's language cookie), then the default."""

from __future__ import annotations

from typing import Any

from django.conf import settings


def supported_language(requested: str | None) -> str:
    """A code of ``settings.LANGUAGES`` for ``requested`` ("de-AT" → "de"), else the default."""
    supported = {code for code, _name in settings.LANGUAGES}
    if requested:
        code = str(requested).lower().replace("_", "-")
        if code in supported:
            return code
        if code.split("-")[0] in supported:
            return code.split("-")[0]
    return str(settings.LANGUAGE_CODE)


def request_language(request: Any) -> str:
    """The language for this request (works for Django and DRF requests)."""
    params = getattr(request, "query_params", None) or getattr(request, "GET", {})
    return supported_language(params.get("lang") or getattr(request, "LANGUAGE_CODE", None))
