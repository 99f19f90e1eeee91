"""``GET /surveys/{id}/export/``: a researcher's download of a survey's distorted answers.

What the zip holds and the privacy rules are :mod:`surveys.export`; this view checks the
query, lets the export check what it may write (errors before any byte is sent), and
streams the zip.
"""

from __future__ import annotations

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request

from consultations.apis import ERRORS, ID_PARAMETER, NOT_FOUND
from consultations.serializers import ErrorSerializer
from core.strict import StrictFieldsMixin
from surveys import export
from surveys.apis import SurveyScopedApi


class ExportQuerySerializer(StrictFieldsMixin, serializers.Serializer):
    format = serializers.ChoiceField(choices=list(export.FORMATS), default="csv")
    exact = serializers.CharField(required=False, allow_blank=True, max_length=2000)

    def validate_exact(self, value: str) -> list[str]:
        return [key.strip() for key in value.split(",") if key.strip()]


class SurveyExportApi(SurveyScopedApi):
    serializer_class = ExportQuerySerializer

    @extend_schema(
        operation_id="surveys_export",
        parameters=[
            ID_PARAMETER,
            OpenApiParameter(
                "format",
                str,
                enum=list(export.FORMATS),
                default="csv",
                description="data.csv or data.parquet inside the zip",
            ),
            OpenApiParameter(
                "exact",
                str,
                required=False,
                description="Comma-separated keys of exact attributes (mechanism none) to "
                "include; only from a closed survey (409 otherwise) and only when every "
                "combination of their answers is shared by at least the consultation's "
                "min_cell participants (400 naming the rule otherwise). Left out by default.",
            ),
        ],
        summary="Download the survey's distorted answers for research (analyst key)",
        description=(
            "A zip streamed in bounded memory: data.csv or data.parquet (one row per live "
            "response; `participant` is a random identifier made for this export only, and "
            "the rows come in a random order, so two exports cannot be linked), scheme.json "
            "(categories, mechanisms, each discrete question's channel and epsilon, the "
            "thresholds) and README.txt. Each export is an audit event `survey.export`."
        ),
        responses={
            (200, "application/zip"): OpenApiTypes.BINARY,
            **ERRORS,
            **NOT_FOUND,
            409: OpenApiResponse(
                ErrorSerializer, description="Exact attributes of a survey that is not closed."
            ),
            410: OpenApiResponse(
                ErrorSerializer, description="The survey's answers were purged (the date named)."
            ),
        },
    )
    def get(self, request: Request, pk: str) -> StreamingHttpResponse:
        query = self.query(ExportQuerySerializer, request)
        plan = export.export_plan(
            survey=self.survey(pk),
            fmt=query["format"],
            exact=query.get("exact") or [],
            actor=self.actor,
        )
        response = StreamingHttpResponse(export.stream_zip(plan), content_type="application/zip")
        response["Content-Disposition"] = f'attachment; filename="{plan.filename}"'
        response["Cache-Control"] = "no-store"
        return response
