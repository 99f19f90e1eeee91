from __future__ import annotations

from typing import Any

from rest_framework import serializers

from reconstruction.algorithms.methods import DISCRETE_METHODS, reconstruct
from reconstruction.models import Job


class JobSerializer(serializers.Serializer[Job]):
    """The status view every job shares (api.md, Analyses)."""

    id = serializers.IntegerField(read_only=True)
    status = serializers.ChoiceField(choices=Job.Status.choices, read_only=True)
    progress = serializers.FloatField(read_only=True)
    result = serializers.JSONField(read_only=True, allow_null=True)
    error = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField(read_only=True)
    finished_at = serializers.DateTimeField(read_only=True, allow_null=True)

    def get_error(self, job: Job) -> str | None:
        return job.error or None


class AggregateReconstructionSerializer(JobSerializer):
    counts = serializers.ListField(
        child=serializers.FloatField(min_value=0), min_length=2, max_length=1000,
        help_text="Counts of each reported category (the distorted answers' tallies).",
    )
    channel = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(min_value=0), min_length=2),
        min_length=2, max_length=1000,
        help_text="C[i][j] = Pr(reported j | true i); rows sum to 1.",
    )
    method = serializers.ChoiceField(choices=DISCRETE_METHODS, default="em_as")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        counts, channel = attrs["counts"], attrs["channel"]
        if any(len(row) != len(channel) for row in channel):
            raise serializers.ValidationError({"channel": "The channel must be a square matrix."})
        if len(channel) != len(counts):
            raise serializers.ValidationError(
                {"channel": f"The channel has {len(channel)} rows but there are {len(counts)} counts."}
            )
        if sum(counts) <= 0:
            raise serializers.ValidationError({"counts": "At least one count must be positive."})
        try:  # the engine's own checks, without the costly interval
            reconstruct(counts, channel, method=attrs["method"], ci=False)
        except ValueError as exc:
            field = "method" if "method" in str(exc) else "channel"
            raise serializers.ValidationError({field: str(exc)}) from None
        return attrs


class JobCreatedSerializer(serializers.Serializer[Job]):
    id = serializers.IntegerField()
    status = serializers.CharField()
    url = serializers.CharField()


