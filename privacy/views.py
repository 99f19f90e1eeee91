"""The example portal page: a template that any portal can copy (issue 6).

A plain Django view with no database access: the page's JavaScript fetches the survey's
published scheme from the API, distorts the answers in the browser with
``privacy/static/privacy/distort.js`` and posts only the distorted answers, using the
portal key configured in ``settings.PORTAL_EXAMPLE_KEY``.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe


@require_safe  # type: ignore[untyped-decorator]  # no django-stubs
def portal_example(request: HttpRequest, survey_id: int) -> HttpResponse:
    key = getattr(settings, "PORTAL_EXAMPLE_KEY", "") or ""
    config = {"surveyId": survey_id, "apiBase": "", "key": key}
    return render(
        request,
        "privacy/portal_example.html",
        {"survey_id": survey_id, "config": config, "configured": bool(key)},
    )
