"""Reads of the consultations app, always scoped to one organisation."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from consultations.models import Consultation, Organisation


def consultation_list(
    *, organisation: Organisation, search: str | None = None
) -> QuerySet[Consultation]:
    queryset = Consultation.objects.filter(organisation=organisation)
    if search:
        queryset = queryset.filter(title__icontains=search)
    return queryset.order_by("-created_at", "-id")


def consultation_get(*, organisation: Organisation, pk: Any) -> Consultation | None:
    """The organisation's consultation ``pk``; ``None`` if it is another's or missing."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        return None
    return Consultation.objects.filter(organisation=organisation, pk=pk).first()
