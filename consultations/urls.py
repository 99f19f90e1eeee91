from django.urls import path

from consultations import apis

urlpatterns = [
    path("consultations/", apis.ConsultationListApi.as_view(), name="consultation-list"),
    path(
        "consultations/<str:pk>/", apis.ConsultationDetailApi.as_view(), name="consultation-detail"
    ),
]
