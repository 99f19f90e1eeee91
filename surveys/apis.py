"""``/surveys/``: surveys with their questions, the published scheme, responses, calibration.

Thin views: validate the envelope with a serializer, call one service or selector.
Every object is looked up within the key's organisation, so another organisation's
survey answers 404.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse, HttpResponseNotModified
from django.http.response import HttpResponseBase
from django.utils.http import parse_etags
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from consultations.apibase import ApiView, not_found
from consultations.apis import ERRORS, ID_PARAMETER, NOT_FOUND, PAGE_NOT_FOUND
from consultations.selectors import consultation_get
from consultations.serializers import ErrorSerializer
from consultations.throttling import SubmissionRateThrottle, charge_submissions
from core.errors import SurveyDomainError
from surveys import selectors, services
from surveys.models import Survey
from surveys.serializers import (
    BulkInputSerializer,
    BulkResultSerializer,
    CalibrationInputSerializer,
    CalibrationResultSerializer,
    ResponseInputSerializer,
    SchemeSerializer,
    SubmittedSerializer,
    SurveyFilterSerializer,
    SurveyInputSerializer,
    SurveySerializer,
    SurveyUpdateSerializer,
    WithdrawalInputSerializer,
)

CONFLICT = {409: OpenApiResponse(ErrorSerializer, description="Conflicts with what is stored.")}
THROTTLED = {
    429: OpenApiResponse(
        ErrorSerializer, description="Rate limit of this key exceeded; see Retry-After."
    )
}

SURVEY_EXAMPLE = OpenApiExample(
    "Profile survey",
    request_only=True,
    value={
        "consultation": 1,
        "kind": "profile",
        "title": "Candidate registration",
        "questions": [
            {
                "key": "sex",
                "text": "Sex",
                "type": "binary",
                "categories": ["F", "M"],
                "mechanism": {"name": "randomised_response", "retain": 0.7},
            },
            {
                "key": "district",
                "type": "nominal",
                "categories": ["N", "S", "E", "W", "C"],
                "mechanism": {
                    "name": "randomised_response",
                    "matrix": [
                        [0.6, 0.1, 0.1, 0.1, 0.1],
                        [0.1, 0.6, 0.1, 0.1, 0.1],
                        [0.1, 0.1, 0.6, 0.1, 0.1],
                        [0.1, 0.1, 0.1, 0.6, 0.1],
                        [0.1, 0.1, 0.1, 0.1, 0.6],
                    ],
                },
            },
            {
                "key": "satisfaction",
                "type": "ordinal",
                "categories": ["1", "2", "3", "4", "5"],
                "mechanism": {"name": "negative_uniform"},
            },
            {
                "key": "site",
                "type": "ordinal",
                "categories": ["A", "B", "C", "D", "E", "F", "G"],
                "mechanism": {"name": "negative_gaussian", "sigma": 1.5},
            },
            {
                "key": "skips_class",
                "type": "ordinal",
                "categories": ["never", "rarely", "often", "always"],
                "mechanism": {"name": "negative_manual"},
            },
            {
                "key": "age",
                "type": "continuous",
                "range": [16, 100],
                "mechanism": {"name": "additive_uniform", "half_width": 10},
            },
            {
                "key": "income",
                "type": "continuous",
                "range": [0, 20000],
                "mechanism": {"name": "additive_gaussian", "sigma": 800},
            },
            {
                "key": "tenure",
                "type": "binary",
                "categories": ["own", "rent"],
                "mechanism": {"name": "none"},
            },
        ],
    },
)
SCHEME_EXAMPLE = OpenApiExample(
    "Scheme",
    response_only=True,
    value={
        "survey": 3,
        "title": "Candidate registration",
        "kind": "profile",
        "status": "open",
        "questions": [
            {
                "key": "sex",
                "text": "Sex",
                "type": "binary",
                "required": True,
                "categories": ["F", "M"],
                "mechanism": {"name": "randomised_response", "retain": 0.7},
                "channel": [[0.7, 0.3], [0.3, 0.7]],
                "epsilon": 0.847,
            },
            {
                "key": "skips_class",
                "text": "",
                "type": "ordinal",
                "required": True,
                "categories": ["never", "rarely", "often", "always"],
                "mechanism": {"name": "negative_manual"},
                "instruction": "Choose one answer that is NOT true for you.",
            },
            {
                "key": "age",
                "text": "",
                "type": "continuous",
                "required": True,
                "range": [16, 100],
                "mechanism": {"name": "additive_uniform", "half_width": 10},
            },
        ],
    },
)
RESPONSE_EXAMPLE = OpenApiExample(
    "Response",
    request_only=True,
    value={"participant": "p-000123", "answers": {"sex": "M", "age": 43.2, "district": "E"}},
)


class SurveyScopedApi(ApiView):
    def survey(self, pk: Any) -> Survey:
        survey = selectors.survey_get(organisation=self.organisation, pk=pk)
        if survey is None:
            raise not_found("Survey")
        return survey

    def open_survey_for_portal(self, pk: Any) -> Survey:
        """The survey; a portal key sees only open ones (drafts and closed ones are 404)."""
        survey = self.survey(pk)
        if self.is_portal and survey.status != Survey.Status.OPEN:
            raise not_found("Survey")
        return survey


class SurveyListApi(SurveyScopedApi):
    serializer_class = SurveySerializer
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(
        operation_id="surveys_list",
        summary="List surveys (filter by consultation, kind, status)",
        parameters=[SurveyFilterSerializer],
        responses={200: SurveySerializer(many=True), **ERRORS, **PAGE_NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        filters = self.query(SurveyFilterSerializer, request)
        page = self.paginate_queryset(
            selectors.survey_list(organisation=self.organisation, **filters)
        )
        return self.get_paginated_response(SurveySerializer(page, many=True).data)

    @extend_schema(
        operation_id="surveys_create",
        summary="Create a draft survey with its questions (analyst key)",
        request=SurveyInputSerializer,
        responses={201: SurveySerializer, **ERRORS},
        examples=[SURVEY_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        data = self.validated(SurveyInputSerializer, request.data)
        consultation = consultation_get(organisation=self.organisation, pk=data["consultation"])
        if consultation is None:
            raise exceptions.ValidationError({"consultation": [_("No such consultation.")]})
        survey = services.survey_create(
            organisation=self.organisation,
            consultation=consultation,
            kind=data["kind"],
            title=data["title"],
            questions=data["questions"],
            actor=self.actor,
            retention_days=data.get("retention_days"),
        )
        survey = selectors.survey_get(organisation=self.organisation, pk=survey.pk)
        return Response(SurveySerializer(survey).data, status=status.HTTP_201_CREATED)


class SurveyDetailApi(SurveyScopedApi):
    serializer_class = SurveySerializer

    @extend_schema(
        operation_id="surveys_retrieve",
        parameters=[ID_PARAMETER],
        summary="Read a survey with its questions",
        responses={200: SurveySerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: str) -> Response:
        return Response(SurveySerializer(self.survey(pk)).data)

    def _update(self, request: Request, pk: str, partial: bool) -> Response:
        survey = self.survey(pk)
        data = self.validated(SurveyUpdateSerializer, request.data, partial=partial)
        if not partial and ("title" not in data or "questions" not in data):
            raise exceptions.ValidationError(
                {k: [_("This field is required.")] for k in ("title", "questions") if k not in data}
            )
        for name, current in (("consultation", survey.consultation_id), ("kind", survey.kind)):
            if name in data and data[name] != current:
                raise exceptions.ValidationError(
                    {name: [_("Cannot change a survey's %(field)s.") % {"field": name}]}
                )
        services.survey_update(
            survey=survey,
            title=data.get("title"),
            questions=data.get("questions"),
            actor=self.actor,
            retention_days=data.get("retention_days", services.UNCHANGED),
        )
        return Response(SurveySerializer(self.survey(pk)).data)

    @extend_schema(
        operation_id="surveys_update",
        parameters=[ID_PARAMETER],
        summary="Replace the title and questions of a draft survey (analyst key)",
        request=SurveyUpdateSerializer,
        responses={200: SurveySerializer, **ERRORS, **NOT_FOUND},
    )
    def put(self, request: Request, pk: str) -> Response:
        return self._update(request, pk, partial=False)

    @extend_schema(
        operation_id="surveys_partial_update",
        parameters=[ID_PARAMETER],
        summary="Rename a survey, set its retention_days, or replace a draft survey's questions "
        "(analyst key)",
        request=SurveyUpdateSerializer,
        responses={200: SurveySerializer, **ERRORS, **NOT_FOUND},
        examples=[OpenApiExample("Rename", value={"title": "Registration"}, request_only=True)],
    )
    def patch(self, request: Request, pk: str) -> Response:
        return self._update(request, pk, partial=True)

    @extend_schema(
        operation_id="surveys_destroy",
        parameters=[ID_PARAMETER],
        summary="Delete a draft survey (analyst key)",
        responses={204: None, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def delete(self, request: Request, pk: str) -> Response:
        services.survey_delete(survey=self.survey(pk), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SurveyOpenApi(SurveyScopedApi):
    serializer_class = SurveySerializer

    @extend_schema(
        operation_id="surveys_open",
        parameters=[ID_PARAMETER],
        summary="Open a draft survey; its questions freeze (analyst key)",
        request=None,
        responses={200: SurveySerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request: Request, pk: str) -> Response:
        services.survey_open(survey=self.survey(pk), actor=self.actor)
        return Response(SurveySerializer(self.survey(pk)).data)


class SurveyCloseApi(SurveyScopedApi):
    serializer_class = SurveySerializer

    @extend_schema(
        operation_id="surveys_close",
        parameters=[ID_PARAMETER],
        summary="Close an open survey (analyst key)",
        request=None,
        responses={200: SurveySerializer, **ERRORS, **NOT_FOUND, **CONFLICT},
    )
    def post(self, request: Request, pk: str) -> Response:
        services.survey_close(survey=self.survey(pk), actor=self.actor)
        return Response(SurveySerializer(self.survey(pk)).data)


class SurveySchemeApi(SurveyScopedApi):
    serializer_class = SchemeSerializer
    portal_methods = frozenset({"GET"})

    @extend_schema(
        operation_id="surveys_scheme",
        parameters=[ID_PARAMETER],
        summary="The published scheme: what a client needs to distort answers",
        description="Portal keys read the schemes of open surveys only (others answer 404). "
        "The response carries an ETag; sent back in If-None-Match it gives a 304 without "
        "the body while the survey is unchanged.",
        responses={
            200: SchemeSerializer,
            304: OpenApiResponse(description="Not modified: If-None-Match holds the ETag"),
            **ERRORS,
            **NOT_FOUND,
        },
        examples=[SCHEME_EXAMPLE],
    )
    def get(self, request: Request, pk: str) -> HttpResponseBase:
        survey = self.open_survey_for_portal(pk)
        renderer = request.accepted_renderer
        if not isinstance(renderer, JSONRenderer):
            return Response(selectors.survey_scheme(survey))  # e.g. the browsable API
        # The rendered bytes are cached once the survey opened (issue 13, finding 5);
        # If-None-Match with the current ETag answers 304 without the body.
        rendered = selectors.survey_scheme_rendered(survey, renderer.render)
        sent = parse_etags(request.headers.get("If-None-Match", ""))
        if "*" in sent or rendered.etag in [tag.removeprefix("W/") for tag in sent]:
            response: HttpResponseBase = HttpResponseNotModified()
        else:
            response = HttpResponse(rendered.body, content_type="application/json")
        response["ETag"] = rendered.etag
        response["Cache-Control"] = "no-cache"  # keep it, but ask again (ETag) before use
        return response


class SubmissionApi(SurveyScopedApi):
    """Portal and analyst keys may submit; each key is rate-limited (scope submissions)."""

    portal_methods = frozenset({"POST"})
    throttle_classes = [SubmissionRateThrottle]

    def open_survey(self, pk: Any) -> Survey:
        """The survey for a submission (remembered while open: the hot path)."""
        survey = selectors.survey_for_submission(organisation=self.organisation, pk=pk)
        if survey is None:
            raise not_found("Survey")
        return survey

    def submit(self, pk: Any, service: Any, **kwargs: Any) -> Any:
        """Call a submission service; look the survey up afresh if it changed meanwhile."""
        try:
            return service(survey=self.open_survey(pk), actor=self.actor, **kwargs)
        except services.StaleSurvey:
            selectors.survey_forget(int(pk))
            return service(survey=self.open_survey(pk), actor=self.actor, **kwargs)
        except SurveyDomainError as exc:
            if "survey" in exc.errors:  # it closed: read it again next time
                selectors.survey_forget(int(pk))
            raise


class ResponseSubmitApi(SubmissionApi):
    serializer_class = ResponseInputSerializer

    @extend_schema(
        operation_id="responses_create",
        parameters=[ID_PARAMETER],
        summary="Submit one participant's distorted answers",
        request=ResponseInputSerializer,
        responses={
            201: OpenApiResponse(
                SubmittedSerializer,
                description="Stored; `withdrawal_token` is shown this once.",
            ),
            **ERRORS,
            **NOT_FOUND,
            **THROTTLED,
            409: OpenApiResponse(
                ErrorSerializer,
                description=(
                    "The participant already answered or withdrew; or (with `code`) the "
                    "response would take them past the consultation's privacy budget "
                    "(`privacy_budget`), or re-sends a kept answer that differs from the one "
                    "sent before (`reused_report_differs`). Nothing is stored."
                ),
            ),
        },
        examples=[RESPONSE_EXAMPLE],
    )
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(ResponseInputSerializer, request.data)
        token = self.submit(
            pk, services.response_submit, participant=data["participant"], answers=data["answers"]
        )
        return Response(
            {"participant": data["participant"], "withdrawal_token": token},
            status=status.HTTP_201_CREATED,
        )


class ResponseBulkApi(SubmissionApi):
    serializer_class = BulkInputSerializer

    @extend_schema(
        operation_id="responses_bulk_create",
        parameters=[ID_PARAMETER],
        summary="Submit up to 10,000 responses atomically",
        description=(
            "One bad item rejects the whole batch (400 naming each bad item by index in "
            "`errors.responses`); a participant repeated in the batch or who already "
            "answered gives 409 naming them. Nothing is stored in either case."
        ),
        request=BulkInputSerializer,
        responses={
            201: BulkResultSerializer,
            **ERRORS,
            **NOT_FOUND,
            **THROTTLED,
            409: OpenApiResponse(
                ErrorSerializer,
                description=(
                    "Participants already answered, or (with `code`) items would go past the "
                    "privacy budget (`privacy_budget`) or re-send a differing kept answer "
                    "(`reused_report_differs`); `errors.responses` names the items and "
                    "nothing is stored."
                ),
            ),
        },
        examples=[
            OpenApiExample(
                "Two responses",
                request_only=True,
                value={
                    "responses": [
                        {"participant": "p-000123", "answers": {"sex": "M", "age": 43.2}},
                        {"participant": "p-000124", "answers": {"sex": "F", "age": 19.0}},
                    ]
                },
            ),
            OpenApiExample(
                "Created",
                response_only=True,
                status_codes=["201"],
                value={
                    "created": 2,
                    "withdrawal_tokens": [
                        "q3NnUHl0b1Bk0x4b2yVd7rT9sXkWmAcE",
                        "Zt8fWc2LrHy6QpNa0vBdKs3mUe5jXoGi",
                    ],
                },
            ),
            OpenApiExample(
                "A bad item",
                response_only=True,
                status_codes=["400"],
                value={
                    "detail": "1 of 2 responses is invalid; nothing was stored.",
                    "errors": {
                        "responses": {
                            "1": {
                                "answers": {
                                    "sex": ["Must be one of the categories ['F', 'M'], got 'X'."]
                                }
                            }
                        }
                    },
                },
            ),
        ],
    )
    def post(self, request: Request, pk: str) -> Response:
        self.open_survey(pk)  # 404 before reading a large body
        if self.is_portal:
            _portal_bulk_size(request)
        data = self.validated(BulkInputSerializer, request.data)
        if self.is_portal:
            _portal_bulk_items(request, len(data["responses"]))
        tokens = self.submit(pk, services.responses_submit_bulk, responses=data["responses"])
        return Response(
            {"created": len(tokens), "withdrawal_tokens": tokens}, status=status.HTTP_201_CREATED
        )


def _portal_bulk_message(limit: int) -> str:
    return _(
        "A portal key may send at most %(limit)s responses per bulk submission; larger "
        "ingests use an analyst key."
    ) % {"limit": limit}


class PortalBulkTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "portal_bulk_size"


def _portal_bulk_size(request: Request) -> None:
    """A portal key's bulk body above PORTAL_BULK_MAX_BYTES: 413 before it is read."""
    try:
        length = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        length = 0
    if length > settings.PORTAL_BULK_MAX_BYTES:
        raise PortalBulkTooLarge(
            {
                "detail": _portal_bulk_message(settings.PORTAL_BULK_MAX_ITEMS),
                "errors": {
                    "responses": [
                        _("A portal key's bulk submission is at most %(bytes)s bytes.")
                        % {"bytes": settings.PORTAL_BULK_MAX_BYTES}
                    ]
                },
            }
        )


def _portal_bulk_items(request: Request, items: int) -> None:
    """At most PORTAL_BULK_MAX_ITEMS responses (400 naming ``responses``); each counts
    against the key's submissions quota."""
    if items > settings.PORTAL_BULK_MAX_ITEMS:
        message = _portal_bulk_message(settings.PORTAL_BULK_MAX_ITEMS)
        raise exceptions.ValidationError({"responses": [message]})
    charge_submissions(request, items - 1)  # the request itself was counted


class ResponseWithdrawApi(SubmissionApi):
    """Withdrawal by POST: the reference travels in the body, never in a logged URL."""

    serializer_class = WithdrawalInputSerializer

    @extend_schema(
        operation_id="responses_withdraw",
        parameters=[ID_PARAMETER],
        summary="Withdraw a participant's response with their withdrawal token",
        description=(
            "The answers are deleted and later analyses no longer see them; the participant "
            "cannot answer again. A wrong token and a reference that never answered get the "
            "same 404. Withdrawing twice is harmless. Possible after the survey closed."
        ),
        request=WithdrawalInputSerializer,
        responses={204: None, **ERRORS, **NOT_FOUND, **THROTTLED},
        examples=[
            OpenApiExample(
                "Withdrawal",
                request_only=True,
                value={
                    "participant": "p-000123",
                    "withdrawal_token": "q3NnUHl0b1Bk0x4b2yVd7rT9sXkWmAcE",
                },
            )
        ],
    )
    def post(self, request: Request, pk: str) -> Response:
        data = self.validated(WithdrawalInputSerializer, request.data)
        services.response_withdraw_with_token(
            survey=self.survey(pk),
            participant=data["participant"],
            withdrawal_token=data["withdrawal_token"],
            actor=self.actor,
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class CalibrationApi(SurveyScopedApi):
    """Analyst keys only: pairs estimate a manual negative question's channel."""

    serializer_class = CalibrationInputSerializer

    @extend_schema(
        operation_id="calibration_create",
        parameters=[ID_PARAMETER],
        summary="Upload (true, negative) pairs for a negative_manual question (analyst key)",
        request=CalibrationInputSerializer,
        responses={201: CalibrationResultSerializer, **ERRORS, **NOT_FOUND},
        examples=[
            OpenApiExample(
                "Pairs",
                request_only=True,
                value={
                    "question": "skips_class",
                    "pairs": [["never", "always"], ["rarely", "often"]],
                },
            )
        ],
    )
    def post(self, request: Request, pk: str) -> Response:
        survey = self.survey(pk)
        data = self.validated(CalibrationInputSerializer, request.data)
        result = services.calibration_upload(
            survey=survey, question=data["question"], pairs=data["pairs"], actor=self.actor
        )
        return Response(CalibrationResultSerializer(result).data, status=status.HTTP_201_CREATED)
