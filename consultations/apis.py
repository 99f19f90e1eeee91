"""``/consultations/``: create, list, read, change and delete consultations."""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from consultations.apibase import ApiView, not_found
from consultations.models import Consultation
from consultations.selectors import (
    consultation_get,
    consultation_list,
    portal_origin_get,
    portal_origin_list,
)
from consultations.serializers import (
    ConsultationFilterSerializer,
    ConsultationInputSerializer,
    ConsultationSerializer,
    ErrorSerializer,
    PortalOriginInputSerializer,
    PortalOriginSerializer,
)
from consultations.services import (
    consultation_create,
    consultation_delete,
    consultation_update,
    portal_origin_add,
    portal_origin_remove,
)

ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Invalid input; `errors` names the field."),
    401: OpenApiResponse(ErrorSerializer, description="No, a malformed, revoked or expired key."),
    403: OpenApiResponse(ErrorSerializer, description="The key's role may not do this."),
}
NOT_FOUND = {
    404: OpenApiResponse(ErrorSerializer, description="No such object in your organisation.")
}
# Path ids are matched as strings so that a malformed id gets the API's JSON 404.
ID_PARAMETER = OpenApiParameter("id", OpenApiTypes.INT, OpenApiParameter.PATH)
PAGE_NOT_FOUND = {404: OpenApiResponse(ErrorSerializer, description="No such page.")}
CONSULTATION_EXAMPLE = OpenApiExample(
    "New consultation",
    value={
        "title": "New primary school",
        "description": "Where should the new primary school be built?",
        "min_responses": 10,
        "min_cell": 5,
    },
    request_only=True,
)
CONSULTATION_RESPONSE_EXAMPLE = OpenApiExample(
    "Consultation",
    value={
        "id": 1,
        "title": "New primary school",
        "description": "Where should the new primary school be built?",
        "min_responses": 10,
        "min_cell": 5,
        "created_at": "2026-11-22T09:00:00Z",
        "updated_at": "2026-11-22T09:00:00Z",
    },
    response_only=True,
)


class ConsultationListApi(ApiView):
    serializer_class = ConsultationSerializer
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(
        operation_id="consultations_list",
        summary="List the organisation's consultations",
        parameters=[ConsultationFilterSerializer],
        responses={200: ConsultationSerializer(many=True), **ERRORS, **PAGE_NOT_FOUND},
    )
    def get(self, request: Request) -> Response:
        filters = self.query(ConsultationFilterSerializer, request)
        page = self.paginate_queryset(
            consultation_list(organisation=self.organisation, search=filters.get("search"))
        )
        return self.get_paginated_response(ConsultationSerializer(page, many=True).data)

    @extend_schema(
        operation_id="consultations_create",
        summary="Create a consultation (analyst key)",
        request=ConsultationInputSerializer,
        responses={201: ConsultationSerializer, **ERRORS},
        examples=[CONSULTATION_EXAMPLE, CONSULTATION_RESPONSE_EXAMPLE],
    )
    def post(self, request: Request) -> Response:
        data = self.validated(ConsultationInputSerializer, request.data)
        consultation = consultation_create(organisation=self.organisation, actor=self.actor, **data)
        return Response(ConsultationSerializer(consultation).data, status=status.HTTP_201_CREATED)


class ConsultationDetailApi(ApiView):
    serializer_class = ConsultationSerializer

    def consultation(self, pk: Any) -> Consultation:
        consultation = consultation_get(organisation=self.organisation, pk=pk)
        if consultation is None:
            raise not_found("Consultation")
        return consultation

    @extend_schema(
        operation_id="consultations_retrieve",
        parameters=[ID_PARAMETER],
        summary="Read a consultation",
        responses={200: ConsultationSerializer, **ERRORS, **NOT_FOUND},
    )
    def get(self, request: Request, pk: str) -> Response:
        return Response(ConsultationSerializer(self.consultation(pk)).data)

    def _update(self, request: Request, pk: str, partial: bool) -> Response:
        consultation = self.consultation(pk)
        data = self.validated(ConsultationInputSerializer, request.data, partial=partial)
        if partial:
            data = {k: v for k, v in data.items() if k in request.data}
        consultation = consultation_update(consultation=consultation, actor=self.actor, **data)
        return Response(ConsultationSerializer(consultation).data)

    @extend_schema(
        operation_id="consultations_update",
        parameters=[ID_PARAMETER],
        summary="Replace a consultation's fields (analyst key)",
        request=ConsultationInputSerializer,
        responses={200: ConsultationSerializer, **ERRORS, **NOT_FOUND},
        examples=[CONSULTATION_EXAMPLE],
    )
    def put(self, request: Request, pk: str) -> Response:
        return self._update(request, pk, partial=False)

    @extend_schema(
        operation_id="consultations_partial_update",
        parameters=[ID_PARAMETER],
        summary="Change some of a consultation's fields (analyst key)",
        request=ConsultationInputSerializer(partial=True),
        responses={200: ConsultationSerializer, **ERRORS, **NOT_FOUND},
        examples=[OpenApiExample("Stricter thresholds", value={"min_cell": 10}, request_only=True)],
    )
    def patch(self, request: Request, pk: str) -> Response:
        return self._update(request, pk, partial=True)

    @extend_schema(
        operation_id="consultations_destroy",
        parameters=[ID_PARAMETER],
        summary="Delete a consultation whose surveys never opened (analyst key)",
        responses={
            204: None,
            **ERRORS,
            **NOT_FOUND,
            409: OpenApiResponse(ErrorSerializer, description="A survey has been opened."),
        },
    )
    def delete(self, request: Request, pk: str) -> Response:
        consultation_delete(consultation=self.consultation(pk), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PortalOriginListApi(ApiView):
    """The web origins whose pages may call the API from a browser (CORS)."""

    serializer_class = PortalOriginSerializer

    @extend_schema(
        operation_id="portal_origins_list",
        summary="List the organisation's allowed portal origins (analyst key)",
        responses={200: PortalOriginSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        origins = portal_origin_list(organisation=self.organisation)
        return Response(PortalOriginSerializer(origins, many=True).data)

    @extend_schema(
        operation_id="portal_origins_create",
        summary="Allow a portal origin to call the API from browsers (analyst key)",
        description="A badly formed origin (a path, no scheme, a wildcard) is refused with a "
        "400 naming it.",
        request=PortalOriginInputSerializer,
        responses={
            201: PortalOriginSerializer,
            **ERRORS,
            409: OpenApiResponse(ErrorSerializer, description="Already listed."),
        },
        examples=[
            OpenApiExample(
                "Origin", value={"origin": "https://www.leeds.gov.uk"}, request_only=True
            )
        ],
    )
    def post(self, request: Request) -> Response:
        data = self.validated(PortalOriginInputSerializer, request.data)
        origin = portal_origin_add(
            organisation=self.organisation, origin=data["origin"], actor=self.actor
        )
        return Response(PortalOriginSerializer(origin).data, status=status.HTTP_201_CREATED)


class PortalOriginDetailApi(ApiView):
    serializer_class = PortalOriginSerializer

    @extend_schema(
        operation_id="portal_origins_destroy",
        parameters=[ID_PARAMETER],
        summary="Stop allowing a portal origin (analyst key)",
        responses={204: None, **ERRORS, **NOT_FOUND},
    )
    def delete(self, request: Request, pk: str) -> Response:
        origin = portal_origin_get(organisation=self.organisation, pk=pk)
        if origin is None:
            raise not_found("Portal origin")
        portal_origin_remove(portal_origin=origin, actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)
