"""Admin for organisers: surveys with their questions, responses (read-only), calibration.

Distorted answers are evidence and never edited here; surveys open and close through the
services (admin actions), so the audit trail records who did it.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from consultations.admin import staff_actor
from surveys import services
from surveys.errors import SurveyDomainError
from surveys.models import Answer, CalibrationPair, Participant, Question, Response, Survey


class ReadOnlyAdminMixin:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class QuestionInline(ReadOnlyAdminMixin, admin.TabularInline):
    """Questions are created with their survey through the API or the services, which
    validate every mechanism; they are frozen once the survey opens."""

    model = Question
    fields = [
        "position",
        "key",
        "text",
        "type",
        "required",
        "categories",
        "range_low",
        "range_high",
        "mechanism",
        "mechanism_params",
    ]
    readonly_fields = fields
    extra = 0
    ordering = ["position"]


@admin.register(Survey)
class SurveyAdmin(admin.ModelAdmin):
    list_display = [
        "title",
        "consultation",
        "kind",
        "status",
        "created_at",
        "opened_at",
        "closed_at",
    ]
    list_filter = ["status", "kind", "consultation__organisation"]
    search_fields = ["title", "consultation__title"]
    readonly_fields = ["consultation", "kind", "status", "created_at", "opened_at", "closed_at"]
    inlines = [QuestionInline]
    actions = ["open_surveys", "close_surveys", "start_report"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # created with questions through the API / services

    def save_model(self, request: HttpRequest, obj: Survey, form: Any, change: bool) -> None:
        services.survey_update(survey=obj, title=obj.title, actor=staff_actor(request))

    def _transition(
        self, request: HttpRequest, queryset: QuerySet[Survey], service: Any, verb: str
    ) -> None:
        done = 0
        for survey in queryset:
            try:
                service(survey=survey, actor=staff_actor(request))
                done += 1
            except SurveyDomainError as exc:
                self.message_user(request, f"{survey}: {exc.detail}", level=messages.ERROR)
        if done:
            self.message_user(request, f"{verb} {done} survey(s).")

    @admin.action(description="Open the selected draft surveys")
    def open_surveys(self, request: HttpRequest, queryset: QuerySet[Survey]) -> None:
        self._transition(request, queryset, services.survey_open, "Opened")

    @admin.action(description="Close the selected open surveys")
    def close_surveys(self, request: HttpRequest, queryset: QuerySet[Survey]) -> None:
        self._transition(request, queryset, services.survey_close, "Closed")

    @admin.action(description="Start a report of the selected surveys")
    def start_report(self, request: HttpRequest, queryset: QuerySet[Survey]) -> None:
        from reconstruction.services import report_create

        for survey in queryset.select_related("consultation__organisation"):
            report = report_create(
                organisation=survey.consultation.organisation,
                survey=survey,
                requested_by=staff_actor(request),
            )
            self.message_user(
                request,
                f"Report {report.pk} of “{survey}” was queued; see Reports.",
                level=messages.SUCCESS,
            )


class AnswerInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Answer
    fields = ["question", "code", "value"]
    readonly_fields = fields
    extra = 0


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Distorted answers: read-only. Withdrawal goes through the service."""

    list_display = ["id", "survey", "participant", "submitted_at", "withdrawn_at"]
    list_filter = ["survey__status", ("withdrawn_at", admin.EmptyFieldListFilter), "survey"]
    search_fields = ["participant__reference"]
    readonly_fields = ["survey", "participant", "submitted_at", "withdrawn_at"]
    list_select_related = ["survey", "participant"]
    inlines = [AnswerInline]
    actions = ["withdraw"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The change list needs the view permission only; actions check their own.
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if not request.user.has_perm("surveys.delete_response"):
            actions.pop("withdraw", None)
        return actions

    @admin.action(description="Withdraw the selected responses (answers deleted)")
    def withdraw(self, request: HttpRequest, queryset: QuerySet[Response]) -> None:
        for response in queryset.select_related("survey", "participant"):
            services.response_withdraw(
                survey=response.survey,
                participant=response.participant.reference,
                actor=staff_actor(request),
            )
        self.message_user(request, f"Withdrew {queryset.count()} response(s).")


@admin.register(Participant)
class ParticipantAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["reference", "consultation"]
    list_filter = ["consultation__organisation"]
    search_fields = ["reference"]


@admin.register(CalibrationPair)
class CalibrationPairAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["question", "true_label", "negative_label", "uploaded_at"]
    list_filter = ["question__survey"]
    search_fields = ["question__key"]
    list_select_related = ["question"]

    @admin.display(description="true")
    def true_label(self, pair: CalibrationPair) -> str:
        return str(pair.question.categories[pair.true_code])

    @admin.display(description="negative")
    def negative_label(self, pair: CalibrationPair) -> str:
        return str(pair.question.categories[pair.negative_code])
