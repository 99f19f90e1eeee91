"""Writes of the consultations app: organisations, keys and the audit trail."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from consultations.models import ApiKey, AuditEvent, Organisation


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class IssuedKey:
    """A freshly created key: ``key`` is shown once and never stored."""

    api_key: ApiKey
    key: str


@transaction.atomic
def organisation_create(*, slug: str, name: str) -> Organisation:
    organisation = Organisation(slug=slug, name=name)
    organisation.full_clean()
    organisation.save()
    return organisation


@transaction.atomic
def api_key_create(
    *,
    organisation: Organisation,
    role: str,
    name: str = "",
    expires_at: datetime | None = None,
    actor: str = "system",
) -> IssuedKey:
    if role not in ApiKey.Role.values:
        raise ValueError(f"role must be one of {', '.join(ApiKey.Role.values)}, got {role!r}")
    prefix = secrets.token_hex(4)
    key = f"{prefix}.{secrets.token_urlsafe(32)}"
    api_key = ApiKey.objects.create(
        organisation=organisation,
        role=role,
        name=name,
        prefix=prefix,
        hashed_key=hash_key(key),
        expires_at=expires_at,
    )
    audit_record(
        organisation=organisation, actor=actor, action="api_key.create", target=prefix,
        details={"role": role},
    )
    return IssuedKey(api_key=api_key, key=key)


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, actor: str = "system") -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
        audit_record(
            organisation=api_key.organisation, actor=actor, action="api_key.revoke",
            target=api_key.prefix,
        )
    return api_key


def audit_record(
    *,
    organisation: Organisation,
    actor: str,
    action: str,
    target: str = "",
    details: dict[str, Any] | None = None,
) -> AuditEvent:
    return AuditEvent.objects.create(
        organisation=organisation, actor=actor, action=action, target=target,
        details=details or {},
    )
