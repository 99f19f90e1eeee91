"""The survey admin's purge action: a confirmation page, then the purge itself.

Like Django's own "delete selected" action, the first request shows what would be
deleted and what stays; only the confirmation's POST (``confirm=yes``) purges.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from consultations.admin import staff_actor
from core.errors import SurveyDomainError
from surveys import retention
from surveys.models import Survey


class SurveyPurgeActionMixin:
    """Adds ``purge_surveys`` to the survey admin (list it in ``actions``)."""

    @admin.action(
        description=gettext_lazy("Purge the distorted answers of the selected closed surveys"),
        permissions=["change"],
    )
    def purge_surveys(self, request: HttpRequest, queryset: QuerySet[Survey]) -> Any:
        model_admin: Any = self
        surveys = list(queryset.select_related("consultation").order_by("pk"))
        if request.POST.get("confirm") != "yes":
            context = {
                **model_admin.admin_site.each_context(request),
                "title": _("Purge the distorted answers?"),
                "opts": model_admin.model._meta,
                "surveys": [
                    {
                        "survey": survey,
                        "purgeable": survey.status == Survey.Status.CLOSED
                        and survey.purged_at is None,
                        "responses": survey.responses.count(),
                    }
                    for survey in surveys
                ],
                "action_checkbox_name": helpers.ACTION_CHECKBOX_NAME,
                "action": "purge_surveys",
            }
            return TemplateResponse(
                request, "admin/surveys/survey/purge_confirmation.html", context
            )
        purged = 0
        for survey in surveys:
            try:
                result = retention.survey_purge(
                    survey=survey, actor=staff_actor(request), reason="request"
                )
            except SurveyDomainError as exc:
                model_admin.message_user(request, f"{survey}: {exc.detail}", level=messages.ERROR)
                continue
            if not result.already:
                purged += 1
        if purged:
            model_admin.message_user(
                request,
                _("Purged the distorted answers of %(count)s survey(s).") % {"count": purged},
                level=messages.SUCCESS,
            )
        return None
