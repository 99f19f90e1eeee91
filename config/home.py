"""``/``: the front page of a server, linking what people come for (the organisers'
admin, the API documentation, the health check). The admin's "View site" leads here."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET


@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "config/home.html",
        {"portal_example": bool(getattr(settings, "PORTAL_EXAMPLE_ENABLED", False))},
    )
