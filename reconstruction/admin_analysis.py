"""Analyses in the admin: a form asking for a count, a mean or a distribution in plain
words (reconstruction/admin_request_form.py, built from the kinds), and the panel form.
Requests go through the API's serializer and the same service, so they are validated with
the same messages and written to the audit trail as from the API.
"""

from __future__ import annotations

import re
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
    condition_problems,
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
MOST_SEATS = 100_000  # the API's bound on a quota's seats (QuotaSerializer)
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
        # checked by the API's serializer; its message is shown beside this field.
        self.fields["max_outside"] = forms.FloatField(
            label=_("Seats outside each band, at most (optional)"), required=False,
            localize=True,  # 0,5 in German and Polish; 0.5 is read too
            help_text=_(
                "Tightened bands: every panel of the lottery keeps each "
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
                label=_("at least"), required=False, min_value=0, max_value=MOST_SEATS,
                widget=forms.NumberInput(attrs={"class": "seats"}),
            )  # fmt: skip
            self.fields[f"quota_{i}_max"] = forms.IntegerField(
                label=_("at most"), required=False, min_value=0, max_value=MOST_SEATS,
                widget=forms.NumberInput(attrs={"class": "seats"}),
            )  # fmt: skip
        # Which form row each of the request's quotas and eligibility conditions came
        # from (empty rows are skipped), to put the API's messages beside their widgets.
        self.quota_rows_sent: list[int] = []
        self.where_rows_sent: list[int] = []

    def clean(self) -> dict[str, Any]:
        """A row's own problems beside its widgets, in plain words, before the API sees
        the request (which would name ``quotas[0].where[0]`` or ``min 5 ... max 3``)."""
        data = super().clean()
        for i in range(ELIGIBILITY_ROWS):
            condition_problems(self, f"where_{i}", self.questions)
        size = data.get("size")
        seen: dict[int, Any] = {}
        for i in range(QUOTA_ROWS):
            prefix = f"quota_{i}"
            condition_problems(self, prefix, self.questions)
            low, high = data.get(f"{prefix}_min"), data.get(f"{prefix}_max")
            if not data.get(f"{prefix}_attribute"):
                if low is not None or high is not None:
                    self.add_error(
                        f"{prefix}_attribute", _("Choose the question this quota is about.")
                    )
                continue
            condition = condition_from(data, prefix, self.questions)
            same = next((j for j, c in seen.items() if c == condition), None)
            if same is not None:  # the API names it "quotas[1] ... one band from min to max"
                self.add_error(
                    f"{prefix}_attribute",
                    _("Quota %(n)s is about the same residents as quota %(first)s: give each "
                      "group one quota.") % {"n": i + 1, "first": same + 1},
                )  # fmt: skip
            seen[i] = condition
            if low is not None and high is not None and low > high:
                self.add_error(
                    f"{prefix}_min",
                    _("At least %(low)s seats is more than at most %(high)s.")
                    % {"low": low, "high": high},
                )
            elif low is not None and size is not None and low > size:
                self.add_error(
                    f"{prefix}_min",
                    _("At least %(low)s seats is more than the panel's %(size)s seats.")
                    % {"low": low, "size": size},
                )
        return data

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
        where = []
        self.where_rows_sent = []
        for i in range(ELIGIBILITY_ROWS):
            condition = condition_from(data, f"where_{i}", self.questions)
            if condition:
                where.append(condition)
                self.where_rows_sent.append(i)
        if where:
            spec["where"] = where
        quotas = []
        self.quota_rows_sent = []
        for i in range(QUOTA_ROWS):
            condition = condition_from(data, f"quota_{i}", self.questions)
            if condition is None:
                continue
            self.quota_rows_sent.append(i)
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


# The API's paths into a panel request (the panel kind's and the serializer's).
_PATH = re.compile(r"^(quotas|where)\[(\d+)\](?:\.(\w+))?")
# A quota as the panel kind names it in a sentence: ``quotas[1] (visits in [some])``.
_QUOTA_NAME = re.compile(r"quotas\[(\d+)\](?: \((?:[^()\[\]]|\[[^\]]*\])*\))?")


def _leaves(errors: Any) -> list[str]:
    """The messages of an error tree, without their paths."""
    if isinstance(errors, dict):
        return [m for value in errors.values() for m in _leaves(value)]
    if isinstance(errors, (list, tuple)):
        return [m for value in errors for m in _leaves(value)]
    return [str(errors)]


def place_panel_errors(form: PanelRequestForm, errors: Any, labels: dict[str, str]) -> None:
    """The API's refusal of a panel request on the form: a message about one quota or
    eligibility condition beside that row's widgets (its seats, or its question), with
    the row's number as on the form; a message naming quotas (``quotas[1] (visits in
    [some])``) names them "Quota 2"; anything else at the top, after the form part's
    label (:func:`_flatten`)."""

    def row_field(kind: str, index: int, part: str | None) -> str | None:
        rows = form.quota_rows_sent if kind == "quotas" else form.where_rows_sent
        if not 0 <= index < len(rows):
            return None
        prefix = f"{'quota' if kind == 'quotas' else 'where'}_{rows[index]}"
        if kind == "quotas" and part in ("min", "max"):
            return f"{prefix}_{part}"
        return f"{prefix}_attribute"

    def quota_name(match: re.Match[str]) -> str:
        index = int(match.group(1))
        rows = form.quota_rows_sent
        number = rows[index] + 1 if 0 <= index < len(rows) else index + 1
        return _("quota %(n)s") % {"n": number}

    if not isinstance(errors, dict):
        errors = {"non_field_errors": errors}
    for key, value in errors.items():
        key = str(key)
        found = _PATH.match(key)
        if (
            key in ("quotas", "where")
            and isinstance(value, list)
            and any(isinstance(v, dict) for v in value)
        ):  # the serializer's: one entry per quota or condition
            for index, entry in enumerate(value):
                for part, messages_ in (entry or {}).items() if isinstance(entry, dict) else ():
                    field = row_field(key, index, str(part))
                    for message in _leaves(messages_):
                        form.add_error(field, message)
            continue
        if key == "max_outside":  # beside its field (the form does not show the API's name)
            for message in _leaves(value):
                form.add_error(key, message)
            continue
        if found:
            field = row_field(found.group(1), int(found.group(2)), found.group(3))
            for message in _leaves(value):
                form.add_error(field, _QUOTA_NAME.sub(quota_name, message))
            continue
        for message in _flatten({key: value}, labels=labels):
            message = _QUOTA_NAME.sub(quota_name, message)
            for name, question in form.questions.items():  # 'visits' as the form shows it
                message = message.replace(repr(name), f"“{question.text or name}”")
            form.add_error(None, message)


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
                place_panel_errors(form, serializer.errors, labels)
            else:
                try:
                    job = services.analysis_create(
                        organisation=survey.consultation.organisation,
                        survey=survey,
                        spec=dict(serializer.validated_data),
                        requested_by=staff_actor(request),
                    )
                except (AnalysisInputError, SurveyPurged) as exc:
                    place_panel_errors(form, exc.errors, labels)
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
