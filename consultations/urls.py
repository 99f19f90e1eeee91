from django.urls import path

from consultations import apis

urlpatterns = [
    path("consultations/", apis.ConsultationListApi.as_view(), name="consultation-list"),
    path(
        "consultations/<str:pk>/", apis.ConsultationDetailApi.as_view(), name="consultation-detail"
    ),
    path("portal-origins/", apis.PortalOriginListApi.as_view(), name="portal-origin-list"),
    path(
        "portal-origins/<str:pk>/",
        apis.PortalOriginDetailApi.as_view(),
        name="portal-origin-detail",
    ),
]
