"""Organisations, their API keys, consultations and the audit trail."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


def default_languages() -> list[str]:
    return ["en"]


class Organisation(models.Model):
    """A local government (or one of its departments) that runs consultations."""

    slug = models.SlugField(max_length=64, unique=True, verbose_name=_("slug"))
    name = models.CharField(max_length=200, verbose_name=_("name"))
    # Language codes (settings.LANGUAGES) its questions may be translated into.
    languages = models.JSONField(default=default_languages, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("organisation")
        verbose_name_plural = _("organisations")
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.name


class ApiKey(models.Model):
    """A bearer key of one organisation with one role; only its hash is stored.

    The key handed out is ``<prefix>.<secret>``: the prefix finds the row, the
    SHA-256 of the whole key proves possession. Keys are 256-bit random tokens,
    so a fast hash is enough (there is nothing to brute-force).
    """

    class Role(models.TextChoices):
        PORTAL = "portal", "portal"
        ANALYST = "analyst", "analyst"

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="keys", verbose_name=_("organisation")
    )
    name = models.CharField(max_length=100, blank=True, verbose_name=_("name"))
    role = models.CharField(max_length=16, choices=Role.choices, verbose_name=_("role"))
    prefix = models.CharField(max_length=16, unique=True, editable=False, verbose_name=_("prefix"))
    hashed_key = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    expires_at = models.DateTimeField(null=True, blank=True, verbose_name=_("expires at"))
    revoked_at = models.DateTimeField(null=True, blank=True, verbose_name=_("revoked at"))

    class Meta:
        verbose_name = _("API key")
        verbose_name_plural = _("API keys")
        ordering = ["organisation", "-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(role__in=["portal", "analyst"]), name="api_key_role_valid"
            )
        ]

    def __str__(self) -> str:
        # Shown in the admin's messages and links: its name and prefix, not the API's role.
        return f"{self.name} ({self.prefix})" if self.name else self.prefix

    # DRF treats the authenticated principal as ``request.user``.
    is_authenticated = True
    is_anonymous = False

    def is_usable(self, now: timezone.datetime | None = None) -> bool:
        now = now or timezone.now()
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > now

    @property
    def is_analyst(self) -> bool:
        return self.role == self.Role.ANALYST


class AuditEvent(models.Model):
    """Who did what: analyses, reports, key and survey changes.

    ``actor`` is an API key's prefix or a staff username, never a resident.
    """

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="audit_events",
        verbose_name=_("organisation"),
    )
    actor = models.CharField(max_length=150, verbose_name=_("actor"))
    action = models.CharField(max_length=64, verbose_name=_("action"))
    target = models.CharField(max_length=200, blank=True, verbose_name=_("target"))
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(
        auto_now_add=True, db_index=True, verbose_name=_("created at")
    )

    class Meta:
        verbose_name = _("audit event")
        verbose_name_plural = _("audit events")
        ordering = ["-created_at"]
        indexes = [models.Index(fields=["organisation", "action"])]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor} {self.action} {self.target}"


class Consultation(models.Model):
    """A deliberative consultation of one organisation: its surveys share participants.

    ``min_responses`` and ``min_cell`` are the disclosure thresholds applied before any
    number is published (002_f0fd5869fe299975.txt: question-level threshold 10,
    option-level threshold 5); a consultation may only make them stricter.
    """

    MIN_RESPONSES_FLOOR = 10
    MIN_CELL_FLOOR = 5

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.PROTECT,
        related_name="consultations",
        verbose_name=_("organisation"),
    )
    title = models.CharField(max_length=200, verbose_name=_("title"))
    description = models.TextField(blank=True)
    min_responses = models.PositiveIntegerField(
        default=MIN_RESPONSES_FLOOR,
        help_text="Question-level disclosure threshold: fewer responses publish nothing.",
        verbose_name=_("min responses"),
    )
    min_cell = models.PositiveIntegerField(
        default=MIN_CELL_FLOOR,
        help_text="Option-level disclosure threshold: smaller cells are suppressed.",
        verbose_name=_("min cell"),
    )
    # Issue 28: the most that all the consultation's surveys together may learn about one
    # resident (ε of local differential privacy, sequential composition); NULL = no cap,
    # and then no ledger is kept (surveys.privacy_budget).
    privacy_budget = models.FloatField(
        null=True,
        blank=True,
        help_text=(
            "Privacy budget ε per resident across all surveys of the consultation; "
            "empty for no cap."
        ),
        verbose_name=_("privacy budget"),
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = _("consultation")
        verbose_name_plural = _("consultations")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["organisation", "-created_at"])]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(min_responses__gte=10),
                name="consultation_min_responses_at_least_10",
                violation_error_message="min_responses may not be below 10.",
            ),
            models.CheckConstraint(
                condition=models.Q(min_cell__gte=5),
                name="consultation_min_cell_at_least_5",
                violation_error_message="min_cell may not be below 5.",
            ),
            models.CheckConstraint(
                condition=models.Q(privacy_budget__isnull=True)
                | models.Q(privacy_budget__gt=0, privacy_budget__lte=1e6),
                name="consultation_privacy_budget_positive",
                violation_error_message="privacy_budget must be a positive number (or empty).",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class PortalOrigin(models.Model):
    """A web origin (``https://www.leeds.gov.uk``) whose pages may call the API (CORS).

    Portals live on the council's own site; browsers send their requests with that
    origin, and only listed origins get CORS headers back.
    """

    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="portal_origins",
        verbose_name=_("organisation"),
    )
    origin = models.CharField(
        max_length=255, help_text="scheme://host[:port], e.g. https://www.leeds.gov.uk"
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))

    class Meta:
        verbose_name = _("portal origin")
        verbose_name_plural = _("portal origins")
        ordering = ["organisation", "origin"]
        constraints = [
            models.UniqueConstraint(
                fields=["organisation", "origin"], name="portal_origin_unique_per_organisation"
            )
        ]

    def __str__(self) -> str:
        return self.origin


class StaffMembership(models.Model):
    """A staff user works for an organisation: in the admin they see its objects only.

    A staff user may belong to several organisations; superusers see everything.
    """

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    organisation = models.ForeignKey(
        Organisation,
        on_delete=models.CASCADE,
        related_name="memberships",
        verbose_name=_("organisation"),
    )

    class Meta:
        verbose_name = _("staff membership")
        verbose_name_plural = _("staff memberships")
        ordering = ["organisation", "user"]
        constraints = [
            models.UniqueConstraint(fields=["user", "organisation"], name="staff_membership_unique")
        ]

    def __str__(self) -> str:
        return f"{self.user} @ {self.organisation}"
