"""``/surveys/{id}/responses/budget/``: a resident sees their privacy budget (issue 28).

Like withdrawal: portal keys may call it, the participant proves who they are with a
withdrawal token (any of theirs in the consultation), the reference travels in the body
(never in a logged URL), and the key's submissions rate limit applies.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from consultations.apis import ERRORS, ID_PARAMETER, NOT_FOUND
from surveys.apis import THROTTLED, SubmissionApi
from surveys.privacy_budget import participant_budget
from surveys.serializers import BudgetInputSerializer, BudgetSerializer


class ResponseBudgetApi(SubmissionApi):
    serializer_class = BudgetInputSerializer

    @extend_schema(
        operation_id="responses_budget",
        parameters=[ID_PARAMETER],
        summary="A participant's privacy budget in the survey's consultation",
        description=(
            "What the consultation's surveys may learn about one resident in all "
            "(`budget`, epsilon under sequential composition), what the reports they sent "
            "cost (`spent`) and what remains. Proven with any of the participant's "
            "withdrawal tokens in the consultation; a wrong token and an unknown reference "
            "get the same 404. Portal keys may call it."
        ),
        request=BudgetInputSerializer,
        responses={
            200: BudgetSerializer,
            **ERRORS,
            **NOT_FOUND,
            **THROTTLED,
        },
        examples=[
            OpenApiExample(
                "Request",
                request_only=True,
                value={
                    "participant": "p-000123",
                    "withdrawal_token": "q3NnUHl0b1Bk0x4b2yVd7rT9sXkWmAcE",
                },
            ),
            OpenApiExample(
                "Budget",
                response_only=True,
                status_codes=["200"],
                value={"budget": 4.0, "spent": 2.3, "remaining": 1.7},
            ),
        ],
    )
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(BudgetInputSerializer, request.data)
        found = participant_budget(
            survey=self.survey(pk),
            participant=data["participant"],
            withdrawal_token=data["withdrawal_token"],
        )
        return Response(BudgetSerializer(found).data)
