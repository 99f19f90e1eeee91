from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiExample, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from consultations.permissions import IsAnalyst
from reconstruction.models import AggregateReconstruction
from reconstruction.serializers import AggregateReconstructionSerializer, JobCreatedSerializer
from reconstruction.services import aggregate_reconstruction_create


class AggregateReconstructionCreateApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Reconstruct a distribution from tallies of distorted answers",
        description=(
            "Queues a background job that reconstructs the true counts from counts of "
            "reported categories and the channel that distorted them (e.g. a paper negative "
            "survey). Poll the returned URL for the result."
        ),
        request=AggregateReconstructionSerializer,
        responses={202: JobCreatedSerializer},
        examples=[
            OpenApiExample(
                "Uniform negative survey",
                value={"counts": [23, 22, 20, 18, 17],
                       "channel": [[0, .25, .25, .25, .25], [.25, 0, .25, .25, .25],
                                   [.25, .25, 0, .25, .25], [.25, .25, .25, 0, .25],
                                   [.25, .25, .25, .25, 0]],
                       "method": "nstops_i"},
                request_only=True,
            )
        ],
    )
    def post(self, request: Request) -> Response:
        serializer = AggregateReconstructionSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = aggregate_reconstruction_create(
            organisation=request.user.organisation,
            requested_by=request.user.prefix,
            **serializer.validated_data,
        )
        url = f"/api/v1/aggregate-reconstructions/{job.pk}/"
        return Response(
            {"id": job.pk, "status": job.status, "url": url},
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": url},
        )


class AggregateReconstructionDetailApi(APIView):
    permission_classes = [IsAnalyst]

    @extend_schema(
        summary="Status and result of an aggregate reconstruction",
        responses={200: AggregateReconstructionSerializer},
    )
    def get(self, request: Request, job_id: int) -> Response:
        job = get_object_or_404(
            AggregateReconstruction, pk=job_id, organisation=request.user.organisation
        )
        return Response(AggregateReconstructionSerializer(job).data)
