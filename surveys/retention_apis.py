"""``POST /surveys/{id}/purge/``: an analyst purges a closed survey's distorted answers at once.

The purge itself, and what it deletes and keeps, is :mod:`surveys.retention`.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from consultations.apis import ERRORS, ID_PARAMETER, NOT_FOUND
from consultations.serializers import ErrorSerializer
from surveys import retention
from surveys.apis import SurveyScopedApi
from surveys.serializers import SurveySerializer


class SurveyPurgeApi(SurveyScopedApi):
    serializer_class = SurveySerializer

    @extend_schema(
        operation_id="surveys_purge",
        parameters=[ID_PARAMETER],
        summary="Purge a closed survey's distorted answers now (analyst key)",
        description=(
            "Deletes, in one transaction, the survey's answers and responses (a withdrawal "
            "token of a purged response then answers 404 like an unknown one), the "
            "participant references no other response uses, and the response tallies; "
            "records `purged_at` and an audit event `survey.purge`. The survey, its questions "
            "and every result and report already made stay; new analyses and reports of the "
            "survey answer 410 naming the purge date. Purging a purged survey again changes "
            "nothing. A draft or open survey answers 409."
        ),
        request=None,
        responses={
            200: SurveySerializer,
            **ERRORS,
            **NOT_FOUND,
            409: OpenApiResponse(
                ErrorSerializer, description="The survey is a draft or open: close it first."
            ),
        },
    )
    def post(self, request: Request, pk: str) -> Response:
        retention.survey_purge(survey=self.survey(pk), actor=self.actor)
        return Response(SurveySerializer(self.survey(pk)).data)
