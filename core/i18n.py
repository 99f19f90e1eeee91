"""The language a page or download is rendered in: ``?lang=`` first, then what
LocaleMiddleware found (Accept-Language, the admin's language cookie), then the default."""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.utils.formats import number_format


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


def number(value: float, places: int | None = None) -> str:
    """A number in the active language's format (1,000.5 in English, 1.000,5 in German),
    grouped; with ``places`` decimals, else a float to three significant digits."""
    if places is None:
        if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 100):
            return str(number_format(int(value), 0, force_grouping=True))
        size = math.floor(math.log10(abs(value))) if value else 0
        places = max(0, 2 - size)
        text = str(number_format(round(float(value), places), places, force_grouping=True))
        separator = str(number_format(0.5, 1))[1]
        return text.rstrip("0").rstrip(separator) if separator in text else text
    return str(number_format(round(value, places), places, force_grouping=True))
