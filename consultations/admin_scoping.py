"""Organisations in the admin: a staff user sees and changes only their organisations' objects.

A staff user belongs to one or more organisations (:class:`StaffMembership`); superusers
see everything. :class:`OrganisationScopedAdmin` filters a model admin's change list, change
pages, actions and foreign-key choices by the path from its model to
:class:`~consultations.models.Organisation`, found by following foreign keys
(``Response`` → ``survey`` → ``consultation`` → ``organisation``).
:func:`scope_admin_site` mixes it into every registered model admin whose model has such a
path (called from ``ConsultationsConfig.ready``, after the admin modules are loaded), so an
admin page added later is scoped too; ``tests/consultations/test_admin_scoping.py`` checks
every one of them with two organisations.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from django.apps import apps
from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest

from consultations.models import Organisation, StaffMembership


@cache
def organisation_path(model: type[models.Model]) -> str | None:
    """The lookup from ``model`` to its organisation (``""`` for Organisation), or ``None``."""
    if model is Organisation:
        return ""
    frontier: list[tuple[type[models.Model], str]] = [(model, "")]
    for _depth in range(5):
        following = []
        for current, path in frontier:
            for field in current._meta.get_fields():
                if not (field.many_to_one or field.one_to_one) or not field.concrete:
                    continue
                related = field.related_model
                if related is None or related is current:
                    continue
                lookup = f"{path}__{field.name}" if path else field.name
                if related is Organisation:
                    return lookup
                following.append((related, lookup))
        frontier = following
    return None


def member_organisation_ids(request: HttpRequest) -> list[int]:
    user = request.user
    if not getattr(user, "is_authenticated", False):
        return []
    cached = getattr(request, "_member_organisation_ids", None)
    if cached is None:
        cached = list(
            StaffMembership.objects.filter(user_id=user.pk).values_list(
                "organisation_id", flat=True
            )
        )
        request._member_organisation_ids = cached  # type: ignore[attr-defined]
    return cached


def scope_queryset(request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
    """``queryset`` limited to the request's user's organisations (all for superusers)."""
    if getattr(request.user, "is_superuser", False):
        return queryset
    path = organisation_path(queryset.model)
    if path is None:
        return queryset
    lookup = f"{path}__in" if path else "pk__in"
    return queryset.filter(**{lookup: member_organisation_ids(request)})


def may_see_organisation(request: HttpRequest, organisation_id: int) -> bool:
    if getattr(request.user, "is_superuser", False):
        return True
    return organisation_id in member_organisation_ids(request)


class OrganisationScopedAdmin(admin.ModelAdmin):
    """Limit a model admin to the staff user's organisations (see the module docstring)."""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return scope_queryset(request, super().get_queryset(request))

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and hasattr(field, "queryset"):
            field.queryset = scope_queryset(request, field.queryset)
        return field

    def _in_scope(self, request: HttpRequest, obj: Any) -> bool:
        if obj is None or getattr(request.user, "is_superuser", False):
            return True
        return scope_queryset(request, type(obj)._default_manager.filter(pk=obj.pk)).exists()

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_view_permission(request, obj) and self._in_scope(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_change_permission(request, obj) and self._in_scope(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return super().has_delete_permission(request, obj) and self._in_scope(request, obj)

    def get_list_filter(self, request: HttpRequest) -> Any:
        """Relation filters list only related objects in the change list (no other council's)."""
        filters = super().get_list_filter(request)
        if getattr(request.user, "is_superuser", False):
            return filters
        scoped = []
        for entry in filters:
            if isinstance(entry, str) and self._is_relation(entry):
                scoped.append((entry, admin.RelatedOnlyFieldListFilter))
            else:
                scoped.append(entry)
        return scoped

    def _is_relation(self, lookup: str) -> bool:
        model: Any = self.model
        field = None
        for part in lookup.split("__"):
            try:
                field = model._meta.get_field(part)
            except Exception:
                return False
            model = getattr(field, "related_model", None)
            if model is None:
                return False
        return field is not None and bool(field.is_relation)


def scope_admin_site(site: admin.AdminSite) -> None:
    """Mix :class:`OrganisationScopedAdmin` into every model admin whose model has a path."""
    for model in apps.get_models():
        if not site.is_registered(model) or organisation_path(model) is None:
            continue
        model_admin = site.get_model_admin(model)
        if isinstance(model_admin, OrganisationScopedAdmin):
            continue
        scoped = type(
            f"Scoped{type(model_admin).__name__}",
            (OrganisationScopedAdmin, type(model_admin)),
            {"__module__": type(model_admin).__module__},
        )
        site.unregister(model)
        site.register(model, scoped)
