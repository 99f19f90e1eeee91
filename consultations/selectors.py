"""Reads of the consultations app, always scoped to one organisation."""

from __future__ import annotations

import hmac
from typing import Any

from django.db.models import QuerySet

from consultations.keys import hash_key
from consultations.models import ApiKey, Consultation, Organisation, PortalOrigin


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


def api_key_by_secret(key: str) -> ApiKey | None:
    """The usable key whose secret is ``key`` (``<prefix>.<secret>``), else ``None``."""
    prefix, dot, _secret = key.partition(".")
    if not dot or not prefix:
        return None
    api_key = ApiKey.objects.select_related("organisation").filter(prefix=prefix).first()
    if api_key is None or not hmac.compare_digest(api_key.hashed_key, hash_key(key)):
        return None
    return api_key if api_key.is_usable() else None


def portal_origin_list(*, organisation: Organisation) -> QuerySet[PortalOrigin]:
    return PortalOrigin.objects.filter(organisation=organisation).order_by("origin")


def portal_origin_get(*, organisation: Organisation, pk: Any) -> PortalOrigin | None:
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        return None
    return PortalOrigin.objects.filter(organisation=organisation, pk=pk).first()
