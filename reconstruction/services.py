"""Writes of the reconstruction app: creating and running background jobs."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import transaction

from consultations.models import Organisation
from consultations.services import audit_record
from reconstruction.algorithms.methods import reconstruct, reconstruction_as_dict
from reconstruction.jobs import Progress, job_enqueue, job_execute
from reconstruction.models import AggregateReconstruction


@transaction.atomic
def aggregate_reconstruction_create(
    *,
    organisation: Organisation,
    requested_by: str,
    counts: list[float],
    channel: list[list[float]],
    method: str,
) -> AggregateReconstruction:
    """Store the request and queue its job once the transaction commits.

    Inputs are validated by the caller (the serializer runs the engine's own
    checks), so a stored job always has computable input.
    """
    job = AggregateReconstruction.objects.create(
        organisation=organisation, requested_by=requested_by, counts=counts, channel=channel,
        method=method,
    )
    audit_record(
        organisation=organisation, actor=requested_by, action="aggregate_reconstruction.create",
        target=f"job {job.pk}", details={"method": method, "k": len(counts)},
    )
    from reconstruction.tasks import run_aggregate_reconstruction

    job_enqueue(job, run_aggregate_reconstruction)
    return job


def _compute_aggregate(job: AggregateReconstruction, progress: Progress) -> dict[str, Any]:
    progress(0.1)
    result = reconstruct(np.asarray(job.counts, dtype=np.float64), job.channel, method=job.method)
    return reconstruction_as_dict(result)


def aggregate_reconstruction_run(*, job_id: int) -> AggregateReconstruction | None:
    return job_execute(AggregateReconstruction, job_id, _compute_aggregate)
