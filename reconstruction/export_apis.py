"""Downloads of analyses and report tables as CSV, XLSX or ZIP (reconstruction/exports.py).

Shared by the API and the admin site: :func:`analysis_export_response` and
:func:`report_export_response` build the file; the views only find the job.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.utils import translation
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.views import APIView

from consultations.permissions import IsAnalyst
from core.i18n import request_language
from reconstruction import exports
from reconstruction.models import AnalysisJob, Job, Report

FORMAT_PARAMETER = OpenApiParameter(
    "format", str, enum=list(exports.FORMATS), default="csv",
    description="csv (the table alone: a header row, rounded numbers), zip (the table as "
    "`<kind or report>.csv` with `columns.csv`, `notes.csv` and, for an analysis, "
    "`request.json`) or xlsx (sheets: the table, `columns`, `privacy` and, for an "
    "analysis, `request`)",
)  # fmt: skip
LANG_PARAMETER = OpenApiParameter(
    "lang", str, enum=["en", "de", "pl"], required=False,
    description="language of the descriptions and labels (default: Accept-Language)",
)  # fmt: skip
FILE_RESPONSES = {
    (200, "text/csv"): OpenApiTypes.BINARY,
    (200, exports.XLSX_TYPE): OpenApiTypes.BINARY,
    (200, exports.ZIP_TYPE): OpenApiTypes.BINARY,
}


def _checked(job: Job, fmt: str, what: str) -> None:
    if fmt not in exports.FORMATS:
        raise exceptions.ValidationError(
            {"format": _("Unknown format %(format)r; use csv, xlsx or zip.") % {"format": fmt}}
        )
    if job.status != Job.Status.SUCCEEDED:
        raise exceptions.ValidationError(
            {
                what: _("The %(what)s is %(status)s; export it once it has succeeded.")
                % {"what": what, "status": job.status}
            }
        )


def _file(content: bytes, fmt: str, filename: str) -> HttpResponse:
    response = HttpResponse(content, content_type=exports.FORMATS[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}.{fmt}"'
    return response


def analysis_export_response(job: AnalysisJob, fmt: str) -> HttpResponse:
    _checked(job, fmt, "analysis")
    consultation = job.survey.consultation
    thresholds = {"min_responses": consultation.min_responses, "min_cell": consultation.min_cell}
    export = exports.analysis_export(job.kind, job.spec, job.result or {}, thresholds)
    name = f"survey-{job.survey_id}-analysis-{job.pk}"
    return _file(exports.render(export, fmt, job.kind), fmt, name)


def report_export_response(report: Report, fmt: str, language: str | None = None) -> HttpResponse:
    _checked(report, fmt, "report")
    export = exports.report_export(report.result or {}, language)
    name = f"survey-{report.survey_id}-report-{report.pk}"
    return _file(exports.render(export, fmt, "report"), fmt, name)


def requested_language(request: Request) -> str:
    return request_language(request)


class AnalysisExportApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Download an analysis result as CSV, XLSX or ZIP",
        parameters=[FORMAT_PARAMETER, LANG_PARAMETER],
        responses=FILE_RESPONSES,
    )
    def get(self, request: Request, analysis_id: int) -> HttpResponse:
        job = get_object_or_404(AnalysisJob, pk=analysis_id, organisation=request.user.organisation)
        with translation.override(requested_language(request)):
            return analysis_export_response(job, request.query_params.get("format", "csv"))


class ReportExportApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Download a report's table as CSV, XLSX or ZIP",
        parameters=[FORMAT_PARAMETER, LANG_PARAMETER],
        responses=FILE_RESPONSES,
    )
    def get(self, request: Request, report_id: int) -> HttpResponse:
        report = get_object_or_404(Report, pk=report_id, organisation=request.user.organisation)
        language = requested_language(request)
        with translation.override(language):
            return report_export_response(
                report, request.query_params.get("format", "csv"), language
            )
