from django.urls import path

from reconstruction import apis

urlpatterns = [
    path(
        "aggregate-reconstructions/",
        apis.AggregateReconstructionCreateApi.as_view(),
        name="aggregate-reconstruction-create",
    ),
    path(
        "aggregate-reconstructions/<int:job_id>/",
        apis.AggregateReconstructionDetailApi.as_view(),
        name="aggregate-reconstruction-detail",
    ),
]
