from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.generics import ListAPIView
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from consultations.actors import audit_actor
from consultations.permissions import IsAnalyst
from consultations.serializers import ErrorSerializer
from core.i18n import request_language
from core.messages import localise_result
from reconstruction import registry, selectors, services
from reconstruction.models import AnalysisJob, Job, Report
from reconstruction.presentation import render_report_html
from reconstruction.quotas import (
    AggregateRateThrottle,
    AnalysisRateThrottle,
    ReportRateThrottle,
)
from reconstruction.serializers import (
    AggregateReconstructionSerializer,
    AnalysisFilterSerializer,
    AnalysisRequestSerializer,
    AnalysisSerializer,
    JobCreatedSerializer,
    ReportSerializer,
)
from surveys import selectors as survey_selectors

PURGED = {
    410: OpenApiResponse(
        ErrorSerializer,
        description="The survey's answers (or those of a survey it joins) were purged; "
        "`detail` names the date. Results and reports made before stay.",
    )
}


def _accepted(job: Job, url: str) -> Response:
    return Response(
        {"id": job.pk, "status": job.status, "url": url},
        status=status.HTTP_202_ACCEPTED,
        headers={"Location": url},
    )


def _survey_or_404(request: Request, survey_id: Any) -> Any:
    survey = survey_selectors.survey_get(organisation=request.user.organisation, pk=survey_id)
    if survey is None:
        raise exceptions.NotFound(_("No survey with this id in your organisation."))
    return survey


def _report_or_404(request: Request, report_id: Any) -> Report:
    report = selectors.report_get(organisation=request.user.organisation, pk=report_id)
    if report is None:
        raise exceptions.NotFound(_("No report with this id in your organisation."))
    return report


class AggregateReconstructionCreateApi(APIView):
    permission_classes = [IsAnalyst]
    throttle_classes = [AggregateRateThrottle]

    @extend_schema(
        summary="Reconstruct a distribution from tallies of distorted answers",
        description=(
            "Queues a background job that reconstructs the true counts from counts of "
            "reported categories and the channel that distorted them (e.g. a paper negative "
            "survey). Poll the returned URL for the result."
        ),
        request=AggregateReconstructionSerializer,
        responses={202: JobCreatedSerializer},
        examples=[
            OpenApiExample(
                "Uniform negative survey",
                value={
                    "counts": [23, 22, 20, 18, 17],
                    "channel": [
                        [0, 0.25, 0.25, 0.25, 0.25],
                        [0.25, 0, 0.25, 0.25, 0.25],
                        [0.25, 0.25, 0, 0.25, 0.25],
                        [0.25, 0.25, 0.25, 0, 0.25],
                        [0.25, 0.25, 0.25, 0.25, 0],
                    ],
                    "method": "nstops_i",
                },
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = AggregateReconstructionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = services.aggregate_reconstruction_create(
            organisation=request.user.organisation,
            requested_by=audit_actor(request.user),
            **serializer.validated_data,
        )
        return _accepted(job, f"/api/v1/aggregate-reconstructions/{job.pk}/")


class AggregateReconstructionDetailApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Status and result of an aggregate reconstruction",
        responses={200: AggregateReconstructionSerializer},
    )
    def get(self, request: Request, job_id: int) -> Response:
        job = selectors.aggregate_reconstruction_get(
            organisation=request.user.organisation, pk=job_id
        )
        if job is None:
            raise exceptions.NotFound(_("No aggregate reconstruction with this id."))
        return Response(AggregateReconstructionSerializer(job).data)


ANALYSIS_EXAMPLES = [
    OpenApiExample(
        "Conjunctive count",
        request_only=True,
        value={
            "survey": 3,
            "kind": "count",
            "where": [
                {"attribute": "sex", "op": "in", "value": ["F"]},
                {"attribute": "age", "op": "lte", "value": 30},
            ],
        },
    ),
    OpenApiExample(
        "Conditional mean",
        request_only=True,
        value={
            "survey": 3,
            "kind": "mean",
            "attribute": "income",
            "where": [{"attribute": "children", "op": "in", "value": ["Y"]}],
        },
    ),
    OpenApiExample(
        "Distribution",
        request_only=True,
        value={"survey": 3, "kind": "distribution", "attribute": "district", "method": "eq"},
    ),
    OpenApiExample(
        "Stratified sample",
        request_only=True,
        value={
            "survey": 3,
            "kind": "sample",
            "size": 30,
            "seed": 7,
            "where": [{"attribute": "age", "op": "between", "value": [18, 40]}],
            "strata": [
                {"where": [{"attribute": "sex", "op": "in", "value": ["F"]}], "size": 15},
                {"where": [{"attribute": "sex", "op": "in", "value": ["M"]}], "size": 15},
            ],
        },
    ),
    OpenApiExample(
        "Panel with quotas",
        request_only=True,
        value={
            "survey": 3,
            "kind": "panel",
            "size": 30,
            "reserves": 5,
            "seed": 20261123,
            "objective": "maximin",
            "where": [{"attribute": "age", "op": "gt", "value": 15}],
            "quotas": [
                {"where": [{"attribute": "sex", "op": "in", "value": ["F"]}], "min": 14, "max": 16},
                {
                    "where": [{"attribute": "age", "op": "between", "value": [16, 30]}],
                    "min": 5,
                    "max": 9,
                },
            ],
        },
    ),
    OpenApiExample(
        "Count result",
        response_only=True,
        status_codes=["200"],
        value={
            "id": 17,
            "status": "succeeded",
            "progress": 1.0,
            "error": None,
            "kind": "count",
            "survey": 3,
            "result": {
                "estimate": 312.4,
                "ci95": [290.1, 335.0],
                "population": 20000,
                "suppressed": False,
                "method": "joint",
            },
        },
    ),
]


class AnalysisListCreateApi(ListAPIView[AnalysisJob]):
    permission_classes = [IsAnalyst]
    throttle_classes = [AnalysisRateThrottle]
    serializer_class = AnalysisSerializer

    def get_queryset(self) -> Any:
        filters = AnalysisFilterSerializer(data=self.request.query_params)
        filters.is_valid(raise_exception=True)  # ?survey=abc is a 400, not a 500
        return selectors.analysis_list(
            organisation=self.request.user.organisation, **filters.validated_data
        )

    @extend_schema(
        summary="List analyses",
        parameters=[AnalysisFilterSerializer],  # bounds included (survey: 64-bit id)
    )
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Request an analysis (" + ", ".join(registry.KINDS) + ")",
        description=(
            "Validates the request against the survey's questions and the question-level "
            "threshold (judged on running response tallies: no answer is read, so the time "
            "does not grow with the number of participants), then queues a background job "
            "(202). What needs a fit is decided by the worker: a job it may not publish ends "
            "with status `refused` and a reason naming the threshold. Kinds: "
            + "; ".join(f"`{kind.name}`: {kind.summary}" for kind in registry.KINDS.values())
            + ". Methods: "
            + registry.methods_description()
        ),
        request=AnalysisRequestSerializer,
        responses={202: JobCreatedSerializer, **PURGED},
        examples=ANALYSIS_EXAMPLES,
    )
    def post(self, request: Request) -> Response:
        serializer = AnalysisRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        spec = dict(serializer.validated_data)
        survey = _survey_or_404(request, spec["survey"])
        job = services.analysis_create(
            organisation=request.user.organisation,
            survey=survey,
            spec=spec,
            requested_by=audit_actor(request.user),
        )
        return _accepted(job, f"/api/v1/analyses/{job.pk}/")


class AnalysisDetailApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Status, progress and result of an analysis",
        responses={200: AnalysisSerializer},
        examples=ANALYSIS_EXAMPLES[-1:],
    )
    def get(self, request: Request, analysis_id: int) -> Response:
        job = selectors.analysis_get(organisation=request.user.organisation, pk=analysis_id)
        if job is None:
            raise exceptions.NotFound(_("No analysis with this id in your organisation."))
        return Response(AnalysisSerializer(job).data)


def _analysis_or_404(request: Request, analysis_id: Any) -> AnalysisJob:
    job = selectors.analysis_get(organisation=request.user.organisation, pk=analysis_id)
    if job is None:
        raise exceptions.NotFound(_("No analysis with this id in your organisation."))
    return job


class AnalysisCancelApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Cancel an unfinished analysis",
        description=(
            "A queued analysis is never run; a running one (e.g. a long panel) stops at its "
            "next progress report. Either ends `failed` with the reason `Cancelled by ...`. "
            "A finished analysis is returned unchanged."
        ),
        request=None,
        responses={200: AnalysisSerializer},
    )
    def post(self, request: Request, analysis_id: int) -> Response:
        job = _analysis_or_404(request, analysis_id)
        job = services.analysis_cancel(job=job, requested_by=audit_actor(request.user))
        return Response(AnalysisSerializer(job).data)


def probabilities_chunks(text: str, size: int = 64 * 1024) -> Any:
    for start in range(0, len(text), size):
        yield text[start : start + size]


class PanelProbabilitiesApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Every candidate's selection probability of a panel (CSV)",
        description=(
            "One row per candidate of the eligible pool: `participant`, "
            "`selection_probability` (in the lottery that was drawn), `selected` (1 for the "
            "panel's members) and `reserve_rank` (1, 2, ... for the reserves, in order). "
            "Streamed; only for a panel that succeeded."
        ),
        responses={(200, "text/csv"): OpenApiTypes.STR},
    )
    def get(self, request: Request, analysis_id: int) -> StreamingHttpResponse:
        return panel_probabilities_file(_analysis_or_404(request, analysis_id))


def panel_probabilities_file(job: AnalysisJob) -> StreamingHttpResponse:
    """A panel's selection probabilities as a streamed CSV (the API and the admin site)."""
    if job.kind not in registry.KINDS or not registry.KINDS[job.kind].attachment:
        raise exceptions.NotFound(_("Only a panel has selection probabilities."))
    if job.status != Job.Status.SUCCEEDED:
        raise exceptions.ValidationError(
            {
                "analysis": _("The panel is %(status)s; download it once it has succeeded.")
                % {"status": job.status}
            }
        )
    from reconstruction.exports import safe_csv_lines  # a reference may begin with '-'

    response = StreamingHttpResponse(
        safe_csv_lines(job.attachment), content_type="text/csv; charset=utf-8"
    )
    response["Content-Disposition"] = (
        f'attachment; filename="survey-{job.survey_id}-panel-{job.pk}-probabilities.csv"'
    )
    return response


class ReportCreateApi(APIView):
    permission_classes = [IsAnalyst]
    throttle_classes = [ReportRateThrottle]

    @extend_schema(
        summary="Start a report of every question of a survey",
        request=None,
        responses={202: JobCreatedSerializer, **PURGED},
    )
    def post(self, request: Request, survey_id: int) -> Response:
        survey = _survey_or_404(request, survey_id)
        report = services.report_create(
            organisation=request.user.organisation,
            survey=survey,
            requested_by=audit_actor(request.user),
        )
        return _accepted(report, f"/api/v1/reports/{report.pk}/")


class ReportDetailApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(summary="Status of a report", responses={200: ReportSerializer})
    def get(self, request: Request, report_id: int) -> Response:
        report = _report_or_404(request, report_id)
        return Response(ReportSerializer(report).data)


DOWNLOAD_TYPES = {
    "html": "text/html; charset=utf-8",
    "csv": "text/csv; charset=utf-8",
    "json": "application/json",
}


def report_html_in(report: Report, language: str) -> str:
    """The report's HTML in ``language``: rendered when the report finished, or on the first
    download in it and stored (one render per report and language, across processes: a
    second download while the first renders gets a 503 with Retry-After)."""
    from django.core.cache import cache

    stored = (report.renderings or {}).get(language)
    if stored is not None:
        return str(stored)
    lock = f"report-rendering:{report.pk}:{language}"
    if not cache.add(lock, 1, timeout=300):
        raise RenderingInProgress()
    try:
        report.refresh_from_db(fields=["renderings"])
        html = (report.renderings or {}).get(language)
        if html is None:
            html = str(render_report_html(report.result or {}, language=language))
            report.renderings = {**(report.renderings or {}), language: html}
            report.save(update_fields=["renderings"])
        return str(html)
    finally:
        cache.delete(lock)


class RenderingInProgress(exceptions.APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_code = "rendering"

    def __init__(self) -> None:
        super().__init__(_("The report is being prepared in this language; try again shortly."))
        self.wait = 5


def report_file(report: Report, fmt: str, language: str | None = None) -> HttpResponse:
    """A finished report as a download (shared by the API and the admin site); the HTML
    in ``language`` (rendered again from the stored document unless it is the default)."""
    if fmt not in DOWNLOAD_TYPES:
        raise exceptions.ValidationError(
            {
                "format": _("Unknown format %(format)s; use html, csv or json.")
                % {"format": repr(fmt)}
            }
        )
    if report.status != Job.Status.SUCCEEDED:
        raise exceptions.ValidationError(
            {
                "report": _("The report is %(status)s; download it once it has succeeded.")
                % {"status": report.status}
            }
        )
    filename = f"survey-{report.survey_id}-report-{report.pk}.{fmt}"
    if fmt == "json":
        response: HttpResponse = JsonResponse(localise_result(report.result))
    elif fmt == "html" and language and language != settings.LANGUAGE_CODE:
        response = HttpResponse(report_html_in(report, language), content_type=DOWNLOAD_TYPES[fmt])
    elif fmt == "csv":  # formatted again from the document: formula cells neutralised
        from reconstruction.exports import safe_csv_lines
        from reconstruction.reports import report_csv

        document = report.result or {}
        text = (
            report_csv(document) if "questions" in document else "".join(safe_csv_lines(report.csv))
        )
        response = HttpResponse(text, content_type=DOWNLOAD_TYPES[fmt])
    else:
        response = HttpResponse(getattr(report, fmt), content_type=DOWNLOAD_TYPES[fmt])
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


class ReportDownloadApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Download a finished report",
        parameters=[
            OpenApiParameter("format", str, enum=list(DOWNLOAD_TYPES), default="html"),
            OpenApiParameter(
                "lang",
                str,
                enum=["en", "de", "pl"],
                required=False,
                description="language of the HTML report (default: Accept-Language)",
            ),
        ],
        responses={
            (200, "text/html"): OpenApiTypes.STR,
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.OBJECT,
        },
    )
    def get(self, request: Request, report_id: int) -> HttpResponse:
        report = _report_or_404(request, report_id)
        return report_file(
            report, request.query_params.get("format", "html"), request_language(request)
        )
