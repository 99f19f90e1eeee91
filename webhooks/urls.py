from django.urls import path

from webhooks import apis

urlpatterns = [
    path("webhooks/", apis.WebhookListCreateApi.as_view(), name="webhook-list"),
    path("webhooks/<int:webhook_id>/", apis.WebhookDetailApi.as_view(), name="webhook-detail"),
    path(
        "webhooks/<int:webhook_id>/deliveries/",
        apis.DeliveryListApi.as_view(),
        name="webhook-deliveries",
    ),
]
