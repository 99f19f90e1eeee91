"""Staff-only report downloads for the admin site."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404
from rest_framework.exceptions import ValidationError

from reconstruction.apis import report_file
from reconstruction.models import Report


@staff_member_required
def admin_report_download(request: HttpRequest, report_id: int) -> HttpResponse:
    report = get_object_or_404(Report, pk=report_id)
    try:
        return report_file(report, request.GET.get("format", "html"))
    except ValidationError as exc:
        return HttpResponseBadRequest(str(exc.detail))
