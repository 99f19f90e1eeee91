"""Writes of the consultations app: organisations, keys, consultations and the audit trail."""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from consultations.keys import forget_verified_keys, hash_key
from consultations.models import ApiKey, AuditEvent, Consultation, Organisation, PortalOrigin
from core.errors import Conflict, InvalidInput


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
        organisation=organisation,
        actor=actor,
        action="api_key.create",
        target=prefix,
        details={"role": role},
    )
    return IssuedKey(api_key=api_key, key=key)


@transaction.atomic
def api_key_revoke(*, api_key: ApiKey, actor: str = "system") -> ApiKey:
    if api_key.revoked_at is None:
        api_key.revoked_at = timezone.now()
        api_key.save(update_fields=["revoked_at"])
        audit_record(
            organisation=api_key.organisation,
            actor=actor,
            action="api_key.revoke",
            target=api_key.prefix,
        )
    forget_verified_keys(api_key.prefix)
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
        organisation=organisation,
        actor=actor,
        action=action,
        target=target,
        details=details or {},
    )


_CONSULTATION_FIELDS = ("title", "description", "min_responses", "min_cell", "privacy_budget")
# Above this a budget protects nothing (e^1e6); the column's check constraint agrees.
MAX_PRIVACY_BUDGET = 1e6


def privacy_budget_problem(
    consultation: Consultation | None, budget: Any, *, lock: bool = False
) -> str | None:
    """Why ``budget`` cannot be the consultation's ``privacy_budget`` (``None`` if it can).

    A budget is a positive finite ε, or ``None`` for no cap. The ledger of what each
    resident spent is kept only while a budget is set, so once a survey of the consultation
    has opened a budget cannot be introduced (earlier responses were not counted) nor
    lowered (an open survey was checked against the old one, and residents were told it);
    raising or removing it is always possible.
    """
    if budget is None:
        return None
    if (
        not isinstance(budget, (int, float))
        or isinstance(budget, bool)
        or not math.isfinite(budget)
        or not 0 < budget <= MAX_PRIVACY_BUDGET
    ):
        return _(
            "privacy_budget must be a positive finite number (ε, at most %(limit)s), or null "
            "for no cap; got %(value)s."
        ) % {"limit": f"{MAX_PRIVACY_BUDGET:g}", "value": repr(budget)}
    if consultation is None or consultation.pk is None:
        return None
    # Locked FOR NO KEY UPDATE (not blocking submissions, whose FOR KEY SHARE checks the
    # key) inside the caller's transaction: surveys.services.survey_open locks the same
    # row, so a budget change and a survey opening never pass each other's check.
    rows = Consultation.objects.select_for_update(no_key=True) if lock else Consultation.objects
    stored = rows.filter(pk=consultation.pk).values_list("privacy_budget", flat=True).first()
    if not consultation.surveys.exclude(status="draft").exists():
        return None
    if stored is None:
        return _(
            "A privacy budget can only be set before the consultation's first survey opens: "
            "the responses already collected were not counted against one."
        )
    if budget < stored:
        return _(
            "Once a survey has opened, the privacy budget can only be raised (or removed), "
            "not lowered below %(budget)s: open surveys were checked against it and residents "
            "were shown it."
        ) % {"budget": f"{stored:g}"}
    return None


def _check_privacy_budget(consultation: Consultation | None, budget: Any) -> None:
    problem = privacy_budget_problem(consultation, budget, lock=consultation is not None)
    if problem:
        raise InvalidInput(problem, {"privacy_budget": [problem]})


@transaction.atomic
def consultation_create(
    *,
    organisation: Organisation,
    title: str,
    description: str = "",
    min_responses: int = Consultation.MIN_RESPONSES_FLOOR,
    min_cell: int = Consultation.MIN_CELL_FLOOR,
    privacy_budget: float | None = None,
    actor: str = "system",
) -> Consultation:
    """Create a consultation; thresholds below 10 responses / 5 per cell are refused, and
    so is a privacy budget that is not a positive finite ε."""
    _check_privacy_budget(None, privacy_budget)
    consultation = Consultation(
        organisation=organisation,
        title=title,
        description=description,
        min_responses=min_responses,
        min_cell=min_cell,
        privacy_budget=None if privacy_budget is None else float(privacy_budget),
    )
    consultation.full_clean()
    consultation.save()
    audit_record(
        organisation=organisation,
        actor=actor,
        action="consultation.create",
        target=str(consultation.pk),
        details={"title": title},
    )
    return consultation


@transaction.atomic
def consultation_update(
    *, consultation: Consultation, actor: str = "system", **changes: Any
) -> Consultation:
    """Change a consultation's title, description, thresholds or privacy budget
    (:func:`privacy_budget_problem` says when a budget may change)."""
    unknown = sorted(set(changes) - set(_CONSULTATION_FIELDS))
    if unknown:
        raise ValueError(f"consultation_update cannot change {', '.join(unknown)}")
    if "privacy_budget" in changes and changes["privacy_budget"] != consultation.privacy_budget:
        _check_privacy_budget(consultation, changes["privacy_budget"])
        if changes["privacy_budget"] is not None:
            changes["privacy_budget"] = float(changes["privacy_budget"])
    changed = {k: v for k, v in changes.items() if getattr(consultation, k) != v}
    for name, value in changed.items():
        setattr(consultation, name, value)
    if changed:
        consultation.full_clean()
        consultation.save(update_fields=[*changed, "updated_at"])
        audit_record(
            organisation=consultation.organisation,
            actor=actor,
            action="consultation.update",
            target=str(consultation.pk),
            details={"fields": sorted(changed)},
        )
    return consultation


@transaction.atomic
def consultation_delete(*, consultation: Consultation, actor: str = "system") -> None:
    """Delete a consultation whose surveys never opened (their data would go with it).

    Raises
    ------
    core.errors.Conflict
        When one of its surveys has been opened.
    """
    if consultation.surveys.exclude(status="draft").exists():
        raise Conflict(
            _(
                "A consultation with surveys that have been opened cannot be deleted; "
                "close its surveys instead."
            ),
            {"consultation": [_("Has surveys that have been opened.")]},
        )
    organisation, pk = consultation.organisation, consultation.pk
    consultation.surveys.all().delete()
    consultation.delete()
    audit_record(
        organisation=organisation, actor=actor, action="consultation.delete", target=str(pk)
    )


# --------------------------------------------------------------------------- portal origins


@transaction.atomic
def portal_origin_add(
    *, organisation: Organisation, origin: Any, actor: str = "system"
) -> PortalOrigin:
    """List a web origin whose pages may call the API (CORS).

    Raises :class:`core.errors.InvalidInput` naming a badly formed origin, and
    :class:`~core.errors.Conflict` if it is already listed.
    """
    from consultations.origins import BadOrigin, forget_allowed_origins, normalise_origin

    try:
        normalised = normalise_origin(origin)
    except BadOrigin as exc:
        raise InvalidInput(str(exc), {"origin": [str(exc)]}) from None
    if PortalOrigin.objects.filter(organisation=organisation, origin=normalised).exists():
        message = _("%(origin)s is already listed.") % {"origin": normalised}
        raise Conflict(message, {"origin": [message]})
    portal_origin = PortalOrigin.objects.create(organisation=organisation, origin=normalised)
    audit_record(
        organisation=organisation, actor=actor, action="portal_origin.add", target=normalised
    )
    forget_allowed_origins()  # this process at once; the others within the cache delay
    return portal_origin


@transaction.atomic
def portal_origin_remove(*, portal_origin: PortalOrigin, actor: str = "system") -> None:
    from consultations.origins import forget_allowed_origins

    audit_record(
        organisation=portal_origin.organisation,
        actor=actor,
        action="portal_origin.remove",
        target=portal_origin.origin,
    )
    portal_origin.delete()
    forget_allowed_origins()  # this process at once; the others within the cache delay
