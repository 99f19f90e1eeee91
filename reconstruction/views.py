"""Staff-only report downloads for the admin site."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from rest_framework.exceptions import ValidationError

from consultations.admin_scoping import scope_queryset
from core.i18n import request_language
from reconstruction import selectors
from reconstruction.apis import RenderingInProgress, report_file


def _require(request: HttpRequest, permission: str) -> None:
    """The model permission as well as the organisation (issue 27): 403 without it."""
    if not request.user.has_perm(permission):
        raise PermissionDenied


@staff_member_required
def admin_report_download(request: HttpRequest, report_id: int) -> HttpResponse:
    _require(request, "reconstruction.view_report")
    report = selectors.report_get_for_staff(pk=report_id)
    # Only reports of the staff user's organisations (all for superusers); others are 404.
    if report is None or not scope_queryset(request, type(report).objects.filter(pk=report.pk)):
        raise Http404("No such report.")
    try:
        return report_file(report, request.GET.get("format", "html"), request_language(request))
    except ValidationError as exc:
        return HttpResponseBadRequest(str(exc.detail))
    except RenderingInProgress as exc:
        return HttpResponse(str(exc.detail), status=503, headers={"Retry-After": "5"})


@staff_member_required
def admin_analysis_export(request: HttpRequest, analysis_id: int) -> HttpResponse:
    _require(request, "reconstruction.view_analysisjob")
    from django.utils import translation

    from reconstruction.export_apis import analysis_export_response
    from reconstruction.models import AnalysisJob

    jobs = AnalysisJob.objects.select_related("survey__consultation").filter(pk=analysis_id)
    # Only analyses of the staff user's organisations (all for superusers); others are 404.
    job = scope_queryset(request, jobs).first()
    if job is None:
        raise Http404("No such analysis.")
    try:
        with translation.override(request_language(request)):
            return analysis_export_response(job, request.GET.get("format", "csv"))
    except ValidationError as exc:
        return HttpResponseBadRequest(str(exc.detail))


@staff_member_required
def admin_report_export(request: HttpRequest, report_id: int) -> HttpResponse:
    _require(request, "reconstruction.view_report")
    from django.utils import translation

    from reconstruction.export_apis import report_export_response

    report = selectors.report_get_for_staff(pk=report_id)
    if report is None or not scope_queryset(request, type(report).objects.filter(pk=report.pk)):
        raise Http404("No such report.")
    language = request_language(request)
    try:
        with translation.override(language):
            return report_export_response(report, request.GET.get("format", "csv"), language)
    except ValidationError as exc:
        return HttpResponseBadRequest(str(exc.detail))


@staff_member_required
def admin_panel_probabilities(request: HttpRequest, analysis_id: int) -> HttpResponse:
    _require(request, "reconstruction.view_analysisjob")  # the panel's participant list
    from rest_framework.exceptions import NotFound

    from reconstruction.apis import panel_probabilities_file
    from reconstruction.models import AnalysisJob

    jobs = AnalysisJob.objects.select_related("survey__consultation").filter(pk=analysis_id)
    # Only analyses of the staff user's organisations (all for superusers); others are 404.
    job = scope_queryset(request, jobs).first()
    if job is None:
        raise Http404("No such analysis.")
    try:
        return panel_probabilities_file(job)  # type: ignore[return-value]
    except NotFound as exc:
        raise Http404(str(exc.detail)) from None
    except ValidationError as exc:
        return HttpResponseBadRequest(str(exc.detail))
