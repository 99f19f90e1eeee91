"""Analyses in the admin: a form asking for a count, a mean or a distribution in plain
words (reconstruction/admin_request_form.py, built from the kinds), and the panel form.
Requests go through the API's serializer and the same service, so they are validated with
the same messages and written to the audit trail as from the API.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from consultations.admin import staff_actor
from consultations.admin_scoping import scope_queryset
from reconstruction import services
from reconstruction.admin_request_form import (
    AnalysisRequestForm,
    condition_fields,
    condition_from,
    condition_row,
    survey_questions,
)
from reconstruction.analysis import AnalysisInputError
from reconstruction.result_view import footnoted
from reconstruction.serializers import AnalysisRequestSerializer
from surveys.models import Survey
from surveys.retention import SurveyPurged


def _field_labels() -> dict[str, str]:
    """The API's request fields as the forms label them, for the messages of the API's
    serializer and services (fields not listed keep their name, e.g. max_outside, which
    the form's help text names)."""
    return {
        "kind": _("What do you want to know?"),
        "attribute": _("About which question"),
        "method": _("Method"),
        "where": _("Which residents"),
        "size": _("Panel size"),
        "reserves": _("Reserves"),
        "seed": _("Seed"),
        "quotas": _("Quotas"),
    }


def _flatten(errors: Any, prefix: str = "", labels: dict[str, str] | None = None) -> list[str]:
    """The API's error tree as lines, each field named by its label on the form; a quota's
    index as "Quota 2" (numbered from 1, as on the form)."""
    labels = _field_labels() if labels is None else labels
    if isinstance(errors, dict):
        lines = []
        for key, value in errors.items():
            name = labels.get(str(key), str(key))
            if prefix.startswith(labels["quotas"]) and str(key).isdigit():
                name = _("Quota %(n)s") % {"n": int(key) + 1}
            lines += _flatten(value, f"{prefix}{name}: ", labels)
        return lines
    if isinstance(errors, list):
        return [m for v in errors for m in _flatten(v, prefix, labels)]
    return [f"{prefix}{errors}"]


def _form_errors(form: forms.Form | None) -> list[tuple[str, str]]:
    """The form's messages, each with its figures apart (shown as a footnote)."""
    return [] if form is None else [footnoted(e) for e in form.non_field_errors()]


def _survey_id(raw: str) -> int:
    """``?survey=`` as a database id: anything else (text, beyond 64 bits) is a 404."""
    if not raw.isdigit() or not 0 < int(raw) < 2**63:
        raise Http404
    return int(raw)


def request_analysis_view(model_admin: admin.ModelAdmin, request: HttpRequest) -> HttpResponse:
    if not model_admin.has_add_permission(request):  # the model permission (issue 27)
        raise PermissionDenied
    # Only surveys of the staff user's organisations (all for superusers).
    surveys = scope_queryset(
        request,
        Survey.objects.exclude(status=Survey.Status.DRAFT).select_related("consultation"),
    )
    survey = None
    if request.GET.get("survey"):
        survey = get_object_or_404(surveys, pk=_survey_id(request.GET["survey"]))
    form = None
    if survey is not None:
        form = AnalysisRequestForm(request.POST or None, survey=survey)
        if request.method == "POST" and form.is_valid():
            spec = {"survey": survey.pk, **form.spec()}
            serializer = AnalysisRequestSerializer(data=spec)
            if not serializer.is_valid():
                for message in _flatten(serializer.errors):
                    form.add_error(None, message)
            else:
                try:
                    job = services.analysis_create(
                        organisation=survey.consultation.organisation,
                        survey=survey,
                        spec=dict(serializer.validated_data),
                        requested_by=staff_actor(request),
                    )
                except (AnalysisInputError, SurveyPurged) as exc:
                    for message in _flatten(exc.errors):
                        form.add_error(None, message)
                else:
                    # The result page says how far the job is; a banner is only needed
                    # while it waits (run in-process, it has already finished).
                    job.refresh_from_db(fields=["status"])
                    if job.status not in job.FINISHED:
                        model_admin.message_user(
                            request, _("Analysis %(id)s was queued.") % {"id": job.pk},
                            messages.SUCCESS,
                        )  # fmt: skip
                    return HttpResponseRedirect(
                        reverse("admin:reconstruction_analysisjob_change", args=[job.pk])
                    )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": _("Ask for an analysis"),
        "panel_url": reverse("admin:reconstruction_analysisjob_panel"),
        "opts": model_admin.model._meta,
        "surveys": surveys,
        "survey": survey,
        "form": form,
        "form_errors": _form_errors(form),
    }
    return TemplateResponse(request, "admin/reconstruction/analysis_form.html", context)


# --------------------------------------------------------------------------- panels

ELIGIBILITY_ROWS = 2
QUOTA_ROWS = 6
PANEL_FIELDS = ("size", "reserves", "seed", "objective", "max_outside")


class PanelRequestForm(forms.Form):
    """A panel request (issue 14): size, reserves, seed, objective, eligibility and quotas.
    Eligibility and each quota are a condition built from widgets that know the question
    (its answers to tick, or a comparison with a number in its range: the analysis form's
    :func:`~reconstruction.admin_request_form.condition_fields`), each quota with the
    fewest and most seats; nothing is typed as syntax."""

    size = forms.IntegerField(label=gettext_lazy("Panel size"), min_value=1, initial=30)
    reserves = forms.IntegerField(label=gettext_lazy("Reserves"), min_value=0, initial=0)
    seed = forms.IntegerField(
        label=gettext_lazy("Seed"), min_value=0, required=False,
        help_text=gettext_lazy("leave empty for a random seed (the result states it)"),
    )  # fmt: skip
    objective = forms.ChoiceField(
        label=gettext_lazy("Fairness objective"),
        choices=[
            ("maximin", gettext_lazy("maximin: raise the lowest selection probability")),
            ("leximin", gettext_lazy("leximin: then the next lowest, and so on")),
            ("nash", gettext_lazy("nash: maximise the product of the probabilities")),
        ],
    )

    def __init__(self, *args: Any, survey: Survey, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.questions = {q.key: q for q in survey_questions(survey)}
        # The API's opt-in tightened bands (README, additions to api.md); its range is
        # checked by the API's serializer, with the API's message naming max_outside.
        self.fields["max_outside"] = forms.FloatField(
            label=_("Seats outside each band, at most (optional)"), required=False,
            localize=True,  # 0,5 in German and Polish; 0.5 is read too
            help_text=_(
                "Tightened bands (max_outside): every panel of the lottery keeps each "
                "quota's expected seats outside its band at most this, e.g. 0.5, counting "
                "the uncertainty of the distorted answers; a quota that cannot be held to "
                "it gets a looser level, shown in the report. Narrower bands can cost "
                "fairness. Leave empty for the plain bands."
            ),
        )  # fmt: skip
        for i in range(ELIGIBILITY_ROWS):
            self.fields.update(
                condition_fields(
                    f"where_{i}", gettext_lazy("Only candidates whose answer to"), self.questions
                )
            )
        for i in range(QUOTA_ROWS):
            self.fields.update(
                condition_fields(
                    f"quota_{i}", gettext_lazy("Seats for candidates whose answer to"),
                    self.questions,
                )
            )  # fmt: skip
            self.fields[f"quota_{i}_min"] = forms.IntegerField(
                label=_("at least"), required=False, min_value=0,
                widget=forms.NumberInput(attrs={"class": "seats"}),
            )  # fmt: skip
            self.fields[f"quota_{i}_max"] = forms.IntegerField(
                label=_("at most"), required=False, min_value=0,
                widget=forms.NumberInput(attrs={"class": "seats"}),
            )  # fmt: skip

    def panel_fields(self) -> list[Any]:
        return [self[name] for name in PANEL_FIELDS]

    def eligibility_rows(self) -> list[dict[str, Any]]:
        return [condition_row(self, f"where_{i}", i) for i in range(ELIGIBILITY_ROWS)]

    def quota_rows(self) -> list[dict[str, Any]]:
        return [
            {
                **condition_row(self, f"quota_{i}", i),
                "number_label": i + 1,
                "min": self[f"quota_{i}_min"],
                "max": self[f"quota_{i}_max"],
            }
            for i in range(QUOTA_ROWS)
        ]

    def spec(self) -> dict[str, Any]:
        data = self.cleaned_data
        spec: dict[str, Any] = {
            "kind": "panel",
            "size": data["size"],
            "reserves": data.get("reserves") or 0,
            "objective": data.get("objective") or "maximin",
        }
        if data.get("seed") is not None:
            spec["seed"] = data["seed"]
        where = [
            c
            for c in (
                condition_from(data, f"where_{i}", self.questions) for i in range(ELIGIBILITY_ROWS)
            )
            if c
        ]
        if where:
            spec["where"] = where
        quotas = []
        for i in range(QUOTA_ROWS):
            condition = condition_from(data, f"quota_{i}", self.questions)
            if condition is None:
                continue
            low, high = data.get(f"quota_{i}_min"), data.get(f"quota_{i}_max")
            quotas.append(
                {
                    "where": [condition],
                    "min": 0 if low is None else low,
                    "max": data["size"] if high is None else high,
                }
            )
        spec["quotas"] = quotas
        if data.get("max_outside") is not None:
            spec["max_outside"] = float(data["max_outside"])
        return spec


def request_panel_view(model_admin: admin.ModelAdmin, request: HttpRequest) -> HttpResponse:
    """The panel form: the survey first, then size, quotas and options; submitted through
    the API's serializer and service (same checks, same audit trail)."""
    if not model_admin.has_add_permission(request):  # the model permission (issue 27)
        raise PermissionDenied
    surveys = scope_queryset(
        request,
        Survey.objects.exclude(status=Survey.Status.DRAFT).select_related("consultation"),
    )
    survey = None
    if request.GET.get("survey"):
        survey = get_object_or_404(surveys, pk=_survey_id(request.GET["survey"]))
    form = None
    if survey is not None:
        form = PanelRequestForm(request.POST or None, survey=survey)
        labels = {**_field_labels(), "where": _("Who can be selected")}
        if request.method == "POST" and form.is_valid():
            spec = {"survey": survey.pk, **form.spec()}
            serializer = AnalysisRequestSerializer(data=spec)
            if not serializer.is_valid():
                for message in _flatten(serializer.errors, labels=labels):
                    form.add_error(None, message)
            else:
                try:
                    job = services.analysis_create(
                        organisation=survey.consultation.organisation,
                        survey=survey,
                        spec=dict(serializer.validated_data),
                        requested_by=staff_actor(request),
                    )
                except (AnalysisInputError, SurveyPurged) as exc:
                    for message in _flatten(exc.errors, labels=labels):
                        form.add_error(None, message)
                else:
                    # As for analyses: a banner only while the job waits.
                    job.refresh_from_db(fields=["status"])
                    if job.status not in job.FINISHED:
                        model_admin.message_user(
                            request, _("Panel %(id)s was queued.") % {"id": job.pk},
                            messages.SUCCESS,
                        )  # fmt: skip
                    return HttpResponseRedirect(
                        reverse("admin:reconstruction_analysisjob_change", args=[job.pk])
                    )
    context = {
        **model_admin.admin_site.each_context(request),
        "title": _("Draw a panel"),
        "opts": model_admin.model._meta,
        "surveys": surveys,
        "survey": survey,
        "form": form,
        "form_errors": _form_errors(form),
        "form_id": "panel-form",
        "submit_id": "start-panel",
        "submit_label": _("Draw the panel"),
        "intro": _(
            "Candidates' answers were distorted on their devices, so quotas apply to the "
            "expected true counts (sums of posterior probabilities), not to certain counts."
        ),
    }
    return TemplateResponse(request, "admin/reconstruction/panel_form.html", context)
