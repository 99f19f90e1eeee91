"""Staff-only report downloads for the admin site."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from rest_framework.exceptions import ValidationError

from config.i18n import request_language
from reconstruction import selectors
from reconstruction.apis import report_file


@staff_member_required
def admin_report_download(request: HttpRequest, report_id: int) -> HttpResponse:
    report = selectors.report_get_for_staff(pk=report_id)
    if report is None:
        raise Http404("No such report.")
    try:
        return report_file(report, request.GET.get("format", "html"), request_language(request))
    except ValidationError as exc:
        return HttpResponseBadRequest(str(exc.detail))
