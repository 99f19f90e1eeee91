"""Admin for operators: organisations, keys (shown once, revocable), consultations, audit."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html
from django.utils.translation import gettext, ngettext
from django.utils.translation import gettext_lazy as _

from consultations.actors import audit_actor
from consultations.admin_filters import labelled_filter
from consultations.models import (
    ApiKey,
    AuditEvent,
    Consultation,
    Organisation,
    PortalOrigin,
    StaffMembership,
)
from consultations.origins import BadOrigin, forget_allowed_origins, normalise_origin
from consultations.services import (
    api_key_create,
    api_key_revoke,
    consultation_create,
    consultation_update,
    privacy_budget_problem,
)


def staff_actor(request: HttpRequest) -> str:
    return audit_actor(request.user)


class PortalOriginForm(forms.ModelForm):
    class Meta:
        model = PortalOrigin
        fields = ["origin"]

    def clean_origin(self) -> str:
        try:
            return normalise_origin(self.cleaned_data["origin"])
        except BadOrigin as exc:
            raise forms.ValidationError(str(exc)) from None


class PortalOriginInline(admin.TabularInline):
    """Web origins whose pages may call the API from a browser (CORS)."""

    model = PortalOrigin
    form = PortalOriginForm
    extra = 1
    readonly_fields = ["created_at"]


class StaffMembershipInline(admin.TabularInline):
    """Staff users who work for this organisation (superusers only manage this)."""

    model = StaffMembership
    extra = 1
    autocomplete_fields = ["user"]

    # Only superusers decide who works for which organisation.
    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)


class OrganisationForm(forms.ModelForm):
    """The organisation's languages as boxes to tick (the site's languages), not JSON."""

    languages = forms.MultipleChoiceField(
        label=_("Languages"),
        choices=settings.LANGUAGES,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text=_("The languages its questions may be translated into."),
    )

    class Meta:
        model = Organisation
        fields = ["slug", "name", "languages"]

    def clean_languages(self) -> list[str]:
        chosen = self.cleaned_data.get("languages") or []
        # In the site's order, so the builder's translation fields always read alike.
        return [code for code, _name in settings.LANGUAGES if code in chosen]


@admin.register(Organisation)
class OrganisationAdmin(admin.ModelAdmin):
    form = OrganisationForm
    list_display = ["slug", "name", "created_at"]
    search_fields = ["slug", "name"]
    readonly_fields = ["created_at"]
    inlines = [PortalOriginInline, StaffMembershipInline]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        super().save_related(request, form, formsets, change)
        forget_allowed_origins()


# A key's role in the organiser's language (the model's choices are the API's words), with
# what a key of that role is for: the list's column and filter, and the add form's choice.
ROLES = {"portal": _("portal (sends residents' answers)"), "analyst": _("analyst (reads results)")}
ROLE_CHOICES = {
    "portal": (
        _("Residents' portal"),
        _("For your survey website: it sends residents' answers and cannot read any result."),
    ),
    "analyst": (
        _("Analyst"),
        _(
            "For your own tools: it sets up surveys, asks for analyses and reports and reads "
            "their results."
        ),
    ),
}


def role_label(role: str) -> str:
    return str(ROLES.get(role, role))


class ApiKeyForm(forms.ModelForm):
    """A new key's role as two plain choices, each with one line on what the key can do
    (the stored value stays the API's ``portal`` or ``analyst``)."""

    class Meta:
        model = ApiKey
        fields = ["organisation", "role", "name", "expires_at"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "role" in self.fields:
            self.fields["role"] = forms.ChoiceField(
                label=_("What the key is for"),
                choices=[
                    (value, format_html('<strong>{}</strong><br><span class="role-help">{}</span>',
                                        label, description))
                    for value, (label, description) in ROLE_CHOICES.items()
                ],
                widget=forms.RadioSelect,
            )  # fmt: skip


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    form = ApiKeyForm
    list_display = [
        "prefix",
        "organisation",
        "role_shown",
        "name",
        "created_at",
        "expires_at",
        "revoked_at",
    ]
    list_filter = [
        ("role", labelled_filter(role_label)),
        "organisation",
        ("revoked_at", admin.EmptyFieldListFilter),
    ]
    search_fields = ["prefix", "name", "organisation__slug"]
    readonly_fields = ["prefix", "hashed_key", "created_at", "revoked_at"]
    actions = ["revoke"]

    @admin.display(description=_("role"), ordering="role")
    def role_shown(self, key: ApiKey) -> str:
        return role_label(key.role)

    def get_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:  # the key itself is generated, never typed in
            return ["organisation", "role", "name", "expires_at"]
        return [
            "organisation",
            "role_shown",
            "name",
            "prefix",
            "hashed_key",
            "created_at",
            "expires_at",
            "revoked_at",
        ]

    def get_readonly_fields(self, request: HttpRequest, obj: ApiKey | None = None) -> list[str]:
        if obj is None:
            return []
        return ["organisation", "role_shown", *self.readonly_fields]

    def save_model(self, request: HttpRequest, obj: ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = api_key_create(
            organisation=obj.organisation,
            role=obj.role,
            name=obj.name,
            expires_at=obj.expires_at,
            actor=staff_actor(request),
        )
        for field in ("id", "prefix", "hashed_key", "created_at"):
            setattr(obj, field, getattr(issued.api_key, field))
        obj._state.adding = False
        self.message_user(
            request,
            # The key last: it is what the organiser copies.
            gettext("The new key is shown once, store it now: %(key)s") % {"key": issued.key},
            level=messages.WARNING,
        )

    @admin.action(description=_("Revoke the selected keys"), permissions=["change"])
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiKey]) -> None:
        for api_key in queryset:
            api_key_revoke(api_key=api_key, actor=staff_actor(request))
        count = queryset.count()
        self.message_user(
            request,
            ngettext("Revoked %(count)s key.", "Revoked %(count)s keys.", count) % {"count": count},
        )


class ConsultationForm(forms.ModelForm):
    """The privacy budget follows the API's rules (consultations.services)."""

    class Meta:
        model = Consultation
        fields = "__all__"
        # In the organiser's language and words (the model's help texts are English).
        help_texts = {
            "min_responses": _(
                "Fewest answers a question needs before any of its results are published."
            ),
            "min_cell": _("Groups smaller than this are never shown; their figures are hidden."),
            "privacy_budget": _(
                "The most all surveys of this consultation together may learn about one "
                "resident (ε); leave empty for no limit."
            ),
        }

    def clean_privacy_budget(self) -> float | None:
        budget = self.cleaned_data.get("privacy_budget")
        current = self.instance if self.instance.pk else None
        if current is not None and budget == current.privacy_budget:
            return budget
        problem = privacy_budget_problem(current, budget)
        if problem:
            raise forms.ValidationError(problem)
        return budget


@admin.register(Consultation)
class ConsultationAdmin(admin.ModelAdmin):
    form = ConsultationForm
    list_display = [
        "title", "organisation", "min_responses", "min_cell", "privacy_budget", "created_at",
    ]  # fmt: skip
    list_filter = ["organisation"]
    search_fields = ["title", "description"]
    readonly_fields = ["created_at", "updated_at"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return ["organisation", *self.readonly_fields] if obj else list(self.readonly_fields)

    def save_model(self, request: HttpRequest, obj: Consultation, form: Any, change: bool) -> None:
        if change:
            consultation_update(
                consultation=Consultation.objects.get(pk=obj.pk),
                actor=staff_actor(request),
                **{
                    name: form.cleaned_data[name]
                    for name in form.changed_data
                    if name
                    in ("title", "description", "min_responses", "min_cell", "privacy_budget")
                },
            )
            obj.refresh_from_db()
            return
        created = consultation_create(
            organisation=obj.organisation,
            title=obj.title,
            description=obj.description,
            min_responses=obj.min_responses,
            min_cell=obj.min_cell,
            privacy_budget=obj.privacy_budget,
            actor=staff_actor(request),
        )
        obj.pk = created.pk
        obj._state.adding = False


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["created_at", "organisation", "actor", "action", "target"]
    list_filter = ["action", "organisation"]
    search_fields = ["actor", "action", "target"]
    readonly_fields = ["created_at", "organisation", "actor", "action", "target", "details"]
    date_hierarchy = "created_at"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
