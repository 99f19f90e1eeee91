"""Admin for organisers: surveys with their questions, responses (read-only), calibration.

Distorted answers are evidence and never edited here; surveys open and close through the
services (admin actions), so the audit trail records who did it.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, JsonResponse
from django.template.loader import render_to_string
from django.urls import path
from django.utils.translation import gettext_lazy as _

from consultations.admin import staff_actor
from consultations.admin_filters import labelled_filter
from consultations.admin_scoping import scope_queryset
from consultations.models import Consultation
from core.errors import SurveyDomainError
from surveys import services
from surveys.admin_retention import SurveyPurgeActionMixin
from surveys.builder import (
    card_problems,
    mechanism_previews,
    question_card,
    question_preview,
    without_mechanism_name,
)
from surveys.builder_forms import card_fieldsets, question_form_for
from surveys.models import Answer, CalibrationPair, Participant, Question, Response, Survey


class ReadOnlyAdminMixin:
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


MAX_PREVIEW_ROWS = 500


def _respondents(data: Any) -> int:
    try:
        return max(1, min(10_000_000, int(data.get("respondents", 1000))))
    except (TypeError, ValueError):
        return 1000


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


API_FIELD_TO_FORM = {"range": "range_low", "translations": "privacy", "reuse": "ask_again"}


class QuestionFormSet(forms.BaseInlineFormSet):
    """Validates the whole list with the services' own rules and messages."""

    def validate_unique(self) -> None:
        """Left to :meth:`clean`: the services refuse a duplicate key with the API's
        message ("Duplicate key 'sex': question 0 has it."), where Django's own check
        would say "Please correct the duplicate data for key" (and stop there)."""

    frozen = False

    def get_form_kwargs(self, index: int | None) -> dict[str, Any]:
        """A saved survey's cards list its consultation's earlier questions to ask again
        (the formset knows its survey before it makes the forms; the add page does not)."""
        kwargs = super().get_form_kwargs(index)
        survey = self.instance
        if not self.frozen and survey is not None and survey.pk is not None:
            kwargs.update(consultation=survey.consultation, survey=survey)
        return kwargs

    def clean(self) -> None:
        super().clean()
        if self.frozen or any(form.errors for form in self.forms):
            return
        kept = [
            form
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE", False)
        ]
        self.questions = [form.as_api() for form in kept]
        consultation = getattr(self.instance, "consultation", None)
        organisation = consultation.organisation if consultation is not None else None
        try:
            services.validate_questions(
                self.questions, organisation, survey=self.instance if self.instance.pk else None
            )
        except SurveyDomainError as exc:
            items = exc.errors.get("questions")
            if not isinstance(items, list) or len(items) != len(kept):
                raise forms.ValidationError(exc.detail) from None
            for form, problems in zip(kept, items, strict=True):
                for name, messages_ in (problems or {}).items():
                    target = API_FIELD_TO_FORM.get(name, name)
                    for message in messages_ if isinstance(messages_, list) else [messages_]:
                        if name == "translations" and form.languages:
                            target = f"text_{form.languages[0]}"
                        if target in form.fields:
                            form.add_error(target, without_mechanism_name(str(message)))
                        else:
                            form.add_error(None, card_problems({name: [message]}, form.fields))
            raise forms.ValidationError(exc.detail) from None


class QuestionInline(admin.StackedInline):
    """Questions are built here while the survey is a draft, one card each
    (surveys/builder_forms.py), validated by the services exactly as through the API; once
    the survey opens they are frozen and shown as readable cards."""

    model = Question
    form = question_form_for(None)
    formset = QuestionFormSet
    template = "admin/surveys/survey/question_cards.html"
    extra = 0
    verbose_name = _("question")
    verbose_name_plural = _("Questions")
    ordering = ["position"]

    def _frozen(self, obj: Survey | None) -> bool:
        return obj is not None and obj.status != Survey.Status.DRAFT

    def get_formset(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> Any:
        organisation = obj.consultation.organisation if obj is not None else None
        kwargs["form"] = question_form_for(organisation)
        if self._frozen(obj):
            kwargs["fields"] = ["key"]
        formset = super().get_formset(request, obj, **kwargs)
        formset.frozen = self._frozen(obj)
        if formset.frozen:
            formset.cards = [question_card(q) for q in obj.questions.order_by("position")]
        return formset

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        if self._frozen(obj):
            return [(None, {"fields": ["key"]})]
        organisation = obj.consultation.organisation if obj is not None else None
        return card_fieldsets(question_form_for(organisation))

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["key"] if self._frozen(obj) else []

    def get_extra(self, request: HttpRequest, obj: Any = None, **kwargs: Any) -> int:
        return 0 if self._frozen(obj) or (obj is not None and obj.questions.exists()) else 1

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._frozen(obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._frozen(obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return not self._frozen(obj)


class SurveyForm(forms.ModelForm):
    """The survey's own fields, labelled in the organiser's language."""

    class Meta:
        model = Survey
        fields = ["consultation", "kind", "title", "retention_days"]
        labels = {"consultation": _("Consultation"), "kind": _("Kind"), "title": _("Title")}
        help_texts = {
            "retention_days": _(
                "Days after closing until the distorted answers are purged; empty keeps them."
            )
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "kind" in self.fields:  # the model's choices are the API's words
            self.fields["kind"].choices = [
                ("", "—"),
                ("profile", _("profile: who the residents are (one per consultation)")),
                ("opinion", _("opinion: what they think")),
            ]


# A survey's status and kind in the organiser's language (the model's are the API's words).
SURVEY_STATUS = {"draft": _("draft"), "open": _("open"), "closed": _("closed")}
SURVEY_KIND = {"profile": _("profile"), "opinion": _("opinion")}


def survey_status_label(status: str) -> str:
    return str(SURVEY_STATUS.get(status, status))


def survey_kind_label(kind: str) -> str:
    return str(SURVEY_KIND.get(kind, kind))


@admin.register(Survey)
class SurveyAdmin(SurveyPurgeActionMixin, admin.ModelAdmin):
    form = SurveyForm
    list_display = [
        "title",
        "consultation",
        "kind_shown",
        "status_shown",
        "created_at",
        "opened_at",
        "closed_at",
    ]
    list_filter = [
        ("status", labelled_filter(survey_status_label)),
        ("kind", labelled_filter(survey_kind_label)),
        "consultation__organisation",
    ]
    search_fields = ["title", "consultation__title"]
    inlines = [QuestionInline]
    # reconstruction.admin adds start_report
    actions = ["open_surveys", "close_surveys", "purge_surveys"]
    change_form_template = "admin/surveys/survey/builder_change_form.html"

    @admin.display(description=_("kind"), ordering="kind")
    def kind_shown(self, survey: Survey) -> str:
        return survey_kind_label(survey.kind)

    @admin.display(description=_("status"), ordering="status")
    def status_shown(self, survey: Survey) -> str:
        return survey_status_label(survey.status)

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["consultation", "kind", "title", "retention_days"]
        return [
            "consultation", "kind_shown", "title", "status_shown", "created_at", "opened_at",
            "closed_at", "retention_days", "purged_at",
        ]  # fmt: skip

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return []
        return [
            "consultation",
            "kind_shown",
            "status_shown",
            "created_at",
            "opened_at",
            "closed_at",
            "purged_at",
        ]

    def save_model(self, request: HttpRequest, obj: Survey, form: Any, change: bool) -> None:
        # Through the services (validation, audit trail); the questions follow in
        # save_related once the inline formset has validated them.
        if change:
            services.survey_update(
                survey=obj,
                title=obj.title,
                retention_days=obj.retention_days,
                actor=staff_actor(request),
            )
            return
        created = services.survey_create(
            organisation=obj.consultation.organisation,
            consultation=obj.consultation,
            kind=obj.kind,
            title=obj.title,
            questions=[],
            actor=staff_actor(request),
            retention_days=obj.retention_days,
        )
        obj.pk = created.pk
        obj.refresh_from_db()

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        survey = form.instance
        for formset in formsets:
            # Saved by the service, not the formset; the admin's change message reads these.
            formset.new_objects, formset.changed_objects, formset.deleted_objects = [], [], []
            if isinstance(formset, QuestionFormSet) and survey.status == Survey.Status.DRAFT:
                services.survey_update(
                    survey=survey, questions=formset.questions, actor=staff_actor(request)
                )

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> Any:
        survey = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if survey is not None:
            respondents = _respondents(request.GET)
            context["respondents"] = respondents
            context["previews"] = mechanism_previews(survey, respondents)
            context["preview_survey"] = survey.pk
            context["live_preview"] = survey.status == Survey.Status.DRAFT
        return super().change_view(request, object_id, form_url, extra_context=context)

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> Any:
        context = {
            **(extra_context or {}),
            "respondents": _respondents(request.GET),
            "previews": [],
            "live_preview": True,
            # Which languages each consultation's organisation has: the cards show the
            # translation fields of the chosen consultation's languages only.
            "consultation_languages": {
                str(c.pk): list(c.organisation.languages or [])
                for c in scope_queryset(
                    request, Consultation.objects.select_related("organisation")
                )
            },
        }
        return super().add_view(request, form_url, extra_context=context)

    def get_urls(self) -> list[Any]:
        own = [
            path(
                "preview/",
                self.admin_site.admin_view(self.preview_view),
                name="surveys_survey_preview",
            )
        ]
        return own + super().get_urls()

    def preview_view(self, request: HttpRequest) -> JsonResponse:
        """The builder's live preview: the mechanism preview of the questions as typed in
        the (unsaved) admin form, POSTed by ``surveys/builder_preview.js`` on every change.

        Staff only (``admin_view``), for a survey or consultation of the user's
        organisations (404 otherwise); each row is read by the builder's own
        :class:`QuestionForm` and validated by the services' rules, so a bad row shows the
        message that saving would show.
        """
        if request.method != "POST":
            return JsonResponse({"detail": _("Use POST.")}, status=405)
        data = request.POST
        organisation = None
        form_organisation = None  # the add form offers every language (no organisation yet)
        survey_id, consultation_id = data.get("survey"), data.get("consultation")
        saved: dict[str, Any] = {}  # a saved survey's cards list questions to ask again
        if survey_id:
            survey = self.get_queryset(request).filter(pk=_int_or_none(survey_id)).first()
            if survey is None or not self.has_view_permission(request, survey):
                return JsonResponse({"detail": _("Survey not found.")}, status=404)
            organisation = form_organisation = survey.consultation.organisation
            saved = {"consultation": survey.consultation, "survey": survey}
        elif consultation_id:
            consultation = (
                scope_queryset(request, Consultation.objects.select_related("organisation"))
                .filter(pk=_int_or_none(consultation_id))
                .first()
            )
            if consultation is None:
                return JsonResponse({"detail": _("Consultation not found.")}, status=404)
            organisation = consultation.organisation
        else:
            return JsonResponse(
                {"detail": _("Choose a consultation to see the preview.")}, status=400
            )
        if not (self.has_add_permission(request) or self.has_change_permission(request)):
            return JsonResponse({"detail": _("Not allowed.")}, status=403)
        respondents = _respondents(data)
        try:
            total = max(0, min(int(data.get("questions-TOTAL_FORMS", 0)), MAX_PREVIEW_ROWS))
        except ValueError:
            total = 0
        previews = []
        for index in range(total):
            prefix = f"questions-{index}"
            if not (data.get(f"{prefix}-key") or "").strip() or data.get(f"{prefix}-DELETE"):
                continue
            form = question_form_for(form_organisation)(data=data, prefix=prefix, **saved)
            if not form.is_valid():
                problems = {name: list(errors) for name, errors in form.errors.items()}
                previews.append(
                    {
                        "key": data.get(f"{prefix}-key", ""),
                        "text": data.get(f"{prefix}-text", ""),
                        "error": card_problems(problems, form.fields),
                        "prefix": prefix,
                    }
                )
                continue
            raw = form.as_api()
            try:
                services.validate_questions([raw], organisation)
            except SurveyDomainError as exc:
                items = exc.errors.get("questions")
                problems = items[0] if isinstance(items, list) and items else exc.detail
                previews.append(
                    {
                        "key": raw["key"],
                        "text": raw["text"],
                        "error": card_problems(problems, form.fields),
                        "prefix": prefix,
                    }
                )
                continue
            previews.append({**question_preview(raw, respondents), "prefix": prefix})
        html = render_to_string(
            "admin/surveys/survey/preview_items.html", {"previews": previews}, request=request
        )
        return JsonResponse({"respondents": respondents, "previews": previews, "html": html})

    def _transition(
        self, request: HttpRequest, queryset: QuerySet[Survey], service: Any, done_message: Any
    ) -> None:
        done = 0
        for survey in queryset:
            try:
                service(survey=survey, actor=staff_actor(request))
                done += 1
            except SurveyDomainError as exc:
                self.message_user(request, f"{survey}: {exc.detail}", level=messages.ERROR)
        if done:
            self.message_user(request, str(done_message) % {"count": done})

    @admin.action(description=_("Open the selected draft surveys"), permissions=["change"])
    def open_surveys(self, request: HttpRequest, queryset: QuerySet[Survey]) -> None:
        self._transition(request, queryset, services.survey_open, _("Opened %(count)s survey(s)."))

    @admin.action(description=_("Close the selected open surveys"), permissions=["change"])
    def close_surveys(self, request: HttpRequest, queryset: QuerySet[Survey]) -> None:
        self._transition(request, queryset, services.survey_close, _("Closed %(count)s survey(s)."))


class AnswerInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = Answer
    fields = ["question", "code", "value"]
    readonly_fields = fields
    extra = 0


@admin.register(Response)
class ResponseAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Distorted answers: read-only. Withdrawal goes through the service."""

    list_display = ["id", "survey", "participant", "submitted_at", "withdrawn_at"]
    list_filter = [
        ("survey__status", labelled_filter(survey_status_label)),
        ("withdrawn_at", admin.EmptyFieldListFilter),
        "survey",
    ]
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

    @admin.action(description=_("Withdraw the selected responses (answers deleted)"))
    def withdraw(self, request: HttpRequest, queryset: QuerySet[Response]) -> None:
        for response in queryset.select_related("survey", "participant"):
            services.response_withdraw(
                survey=response.survey,
                participant=response.participant.reference,
                actor=staff_actor(request),
            )
        self.message_user(
            request, str(_("Withdrew %(count)s response(s).")) % {"count": queryset.count()}
        )


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

    @admin.display(description=_("true answer"))
    def true_label(self, pair: CalibrationPair) -> str:
        return str(pair.question.categories[pair.true_code])

    @admin.display(description=_("negative answer"))
    def negative_label(self, pair: CalibrationPair) -> str:
        return str(pair.question.categories[pair.negative_code])
