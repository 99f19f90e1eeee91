"""``/webhooks/``: an organisation's webhook URLs (analyst keys) and their deliveries."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy
from drf_spectacular.utils import extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from consultations.apibase import ApiView, not_found
from core.strict import StrictFieldsMixin
from webhooks import services
from webhooks.models import EVENTS, Delivery, Webhook


class WebhookInputSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = gettext_lazy("Unknown field; a webhook has %(fields)s.")
    url = serializers.CharField(max_length=500, help_text="https, resolving to a public address.")
    events = serializers.ListField(
        child=serializers.ChoiceField(choices=EVENTS), min_length=1, max_length=len(EVENTS)
    )


class WebhookSerializer(serializers.ModelSerializer):
    class Meta:
        model = Webhook
        fields = ["id", "url", "events", "active", "created_at"]
        read_only_fields = fields


class WebhookCreatedSerializer(WebhookSerializer):
    secret = serializers.CharField(
        read_only=True,
        help_text=(
            "Shown once: verify X-Webhook-Signature = sha256=HMAC-SHA256(secret, "
            '"<X-Webhook-Timestamp>.<body>") and refuse stale timestamps.'
        ),
    )

    class Meta(WebhookSerializer.Meta):
        fields = [*WebhookSerializer.Meta.fields, "secret"]
        read_only_fields = fields


class DeliverySerializer(serializers.ModelSerializer):
    error = serializers.CharField(
        source="error_text", read_only=True, help_text="Why the delivery failed, if it did."
    )

    class Meta:
        model = Delivery
        fields = [
            "id", "event", "payload", "status", "attempts", "response_status", "error",
            "created_at", "delivered_at",
        ]  # fmt: skip
        read_only_fields = fields


class WebhookListCreateApi(ApiView):
    serializer_class = WebhookSerializer

    @extend_schema(
        summary="List the organisation's webhooks", responses=WebhookSerializer(many=True)
    )
    def get(self, request: Request) -> Response:
        hooks = Webhook.objects.filter(organisation=self.organisation)
        return Response(WebhookSerializer(hooks, many=True).data)

    @extend_schema(
        summary="Register a webhook for analysis.finished, report.finished and/or survey.purged",
        description=(
            "Deliveries are JSON POSTs signed with the webhook's secret: headers "
            "X-Webhook-Event, X-Webhook-Delivery, X-Webhook-Timestamp and X-Webhook-Signature "
            '(sha256=HMAC-SHA256(secret, "<timestamp>.<raw body>")). A URL that is not https, '
            "or that resolves to a private or loopback address, is refused with a 400 unless "
            "the server's settings allow it. Failed deliveries are retried with exponential "
            "backoff, up to 6 attempts."
        ),
        request=WebhookInputSerializer,
        responses={201: WebhookCreatedSerializer},
    )
    def post(self, request: Request) -> Response:
        data = self.validated(WebhookInputSerializer, request.data)
        try:
            hook = services.webhook_create(
                organisation=self.organisation, url=data["url"], events=data["events"],
                actor=self.actor,
            )  # fmt: skip
        except services.WebhookInvalid as exc:
            error = exceptions.ValidationError(exc.errors)
            error.summary = exc.detail  # type: ignore[attr-defined]
            raise error from None
        body = WebhookCreatedSerializer(hook).data
        body["secret"] = hook.secret
        return Response(body, status=status.HTTP_201_CREATED)


class WebhookDetailApi(ApiView):
    serializer_class = WebhookSerializer

    def _get(self, webhook_id: Any) -> Webhook:
        hook = Webhook.objects.filter(organisation=self.organisation, pk=webhook_id).first()
        if hook is None:
            raise not_found("Webhook")
        return hook

    @extend_schema(summary="A webhook", responses=WebhookSerializer)
    def get(self, request: Request, webhook_id: int) -> Response:
        return Response(WebhookSerializer(self._get(webhook_id)).data)

    @extend_schema(summary="Remove a webhook", responses={204: None})
    def delete(self, request: Request, webhook_id: int) -> Response:
        services.webhook_delete(webhook=self._get(webhook_id), actor=self.actor)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DeliveryListApi(WebhookDetailApi):
    serializer_class = DeliverySerializer

    @extend_schema(
        summary="A webhook's latest deliveries (status, attempts)",
        responses=DeliverySerializer(many=True),
    )
    def get(self, request: Request, webhook_id: int) -> Response:
        hook = self._get(webhook_id)
        return Response(DeliverySerializer(hook.deliveries.all()[:100], many=True).data)

    @extend_schema(exclude=True)
    def delete(self, request: Request, webhook_id: int) -> Response:
        raise exceptions.MethodNotAllowed("DELETE")
