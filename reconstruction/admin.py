"""Admin views of background jobs: read-only results; reports can be started here."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from consultations.admin import staff_actor
from consultations.admin_filters import labelled_filter
from core.i18n import number
from core.messages import localise_result, translate_notes
from reconstruction import registry, result_view
from reconstruction.models import AggregateReconstruction, AnalysisJob, Job, Report
from reconstruction.services import report_create
from surveys.admin import SurveyAdmin
from surveys.models import Survey
from surveys.retention import SurveyPurged

JOB_FIELDS = (
    "status_shown",  # translated (the model's choices are the API's English words)
    "progress_shown",
    "error_text",  # the reason in the admin's language
    "attempts",
    "requester",
    "created_at",
    "started",
    "finished",
)


def _moment(value: Any) -> str:
    """A time in the active language's format, in the site's time zone."""
    from django.utils import formats, timezone

    return "—" if value is None else str(formats.localize(timezone.localtime(value)))


class JobLabels:
    """A job's status, times and requester labelled and shown in the admin's language."""

    @admin.display(description=_("status"), ordering="status")
    def status_shown(self, job: Any) -> str:
        return result_view.status_label(job.status)

    @admin.display(description=_("started at"))
    def started(self, job: Any) -> str:
        return _moment(job.started_at)

    @admin.display(description=_("finished at"))
    def finished(self, job: Any) -> str:
        return _moment(job.finished_at)

    @admin.display(description=_("requested by"))
    def requester(self, job: Any) -> str:
        return str(job.requested_by)

    @admin.display(description=_("progress"), ordering="progress")
    def progress_shown(self, job: Any) -> str:
        """How far the job is, as a percentage (the stored fraction read "1,0")."""
        return f"{number(100 * float(job.progress or 0), 0)} %"


def _kind_shown(name: str) -> str:
    return result_view.kind_label(registry.KINDS.get(name), name)


# The changelists' filters in the organiser's language (the model's are the API's words).
STATUS_FILTER = ("status", labelled_filter(result_view.status_label))
KIND_FILTER = ("kind", labelled_filter(_kind_shown, choices=False))


class JobAdmin(JobLabels, admin.ModelAdmin):
    list_filter: Any = (STATUS_FILTER, "organisation")
    search_fields = ("requested_by",)
    date_hierarchy = "created_at"
    exclude = ("error", "error_message")  # error_text shows the reason, translated

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(AnalysisJob)
class AnalysisJobAdmin(JobAdmin):
    """Analyses are asked for with a form (reconstruction/admin_analysis.py) and read on a
    result page with the estimate, its interval, the method, the notes and a chart."""

    list_display = (
        "id", "kind_shown", "survey", "status_shown", "progress_shown", "requested_by",
        "created_at",
    )  # fmt: skip
    list_filter = (STATUS_FILTER, KIND_FILTER, "organisation")
    # The raw request and result are under "technical details" on the result page.
    fields = readonly_fields = (
        "organisation", "survey", "kind_shown", "status_shown", "progress_shown", "error_text",
        "attempts", "requester", "created_at", "started", "finished",
    )  # fmt: skip
    change_form_template = "admin/reconstruction/analysisjob/result_change_form.html"

    @admin.display(description=_("kind"), ordering="kind")
    def kind_shown(self, job: AnalysisJob) -> str:
        return _kind_shown(job.kind)

    def has_add_permission(self, request: HttpRequest) -> bool:
        # The analysis and panel forms run through add_view / panel/: the model permission.
        return bool(request.user.has_perm("reconstruction.add_analysisjob"))

    def get_urls(self) -> list[Any]:
        from django.urls import path

        from reconstruction.admin_analysis import request_panel_view

        panel = path(
            "panel/",
            self.admin_site.admin_view(lambda request: request_panel_view(self, request)),
            name="reconstruction_analysisjob_panel",
        )
        return [panel, *super().get_urls()]

    def add_view(self, request: HttpRequest, form_url: str = "", extra_context: Any = None) -> Any:
        from reconstruction.admin_analysis import request_analysis_view

        return request_analysis_view(self, request)

    def change_view(
        self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None
    ) -> Any:
        from django.utils.safestring import mark_safe

        from reconstruction.presentation import result_chart_svg

        job = self.get_object(request, object_id)
        context = dict(extra_context or {})
        if job is not None:
            result = job.result or {}
            succeeded = job.status == Job.Status.SUCCEEDED
            context.update(
                job=job,
                finished=job.status in Job.FINISHED,
                error=result_view.footnoted(job.error_text()),  # the figures as a footnote
                kind_label=self.kind_shown(job),
                status_label=self.status_shown(job),
                headline=result_view.headline(result) if succeeded else "",
                category_rows=result_view.category_rows(result) if succeeded else [],
                summary=result_view.summary_rows(result) if succeeded else [],
                # Only beside an interval (a sample has none).
                interval_meaning=result_view.interval_meaning()
                if "ci95" in result or "counts" in result
                else "",
                technical=result_view.technical(job.spec, localise_result(result)),
                notes=translate_notes(result.get("notes")),
                chart=mark_safe(result_chart_svg(result))  # matplotlib's own SVG
                if job.status == Job.Status.SUCCEEDED
                else "",
                exports=reverse("admin-analysis-export", args=[job.pk]),
            )
            kind = registry.KINDS.get(job.kind)
            if kind is not None and kind.attachment and job.status == Job.Status.SUCCEEDED:
                from reconstruction.presentation import (
                    panel_caveat,
                    panel_chart_svg,
                    panel_probabilities,
                    panel_quota_rows,
                )

                asked = kind.parse({**job.spec, "kind": job.kind})  # the stored request, typed
                chances = result.get("selection_probability") or {}
                context.update(
                    panel=localise_result(result),
                    # Chances as percentages in the reader's format (were 0.0100).
                    selection={
                        name: f"{number(100 * float(chances[name]))} %"
                        for name in ("min", "median", "max")
                        if isinstance(chances.get(name), int | float)
                    },
                    quota_rows=panel_quota_rows(result),
                    # max_outside asked for: each quota's level (a quota without one
                    # kept its plain band).
                    outside_levels=getattr(asked, "max_outside", None) is not None,
                    caveat=panel_caveat(),
                    chart=mark_safe(  # matplotlib's own SVG
                        panel_chart_svg(result, panel_probabilities(job.attachment))
                    ),
                    probabilities=reverse("admin-panel-probabilities", args=[job.pk]),
                )
        return super().change_view(request, object_id, form_url, extra_context=context)


@admin.register(AggregateReconstruction)
class AggregateReconstructionAdmin(JobAdmin):
    list_display = ("id", "method", "status_shown", "requested_by", "created_at")
    readonly_fields = ("organisation", "method", "counts", "channel", "result", *JOB_FIELDS)


class StartReportForm(forms.ModelForm):
    class Meta:
        model = Report
        fields = ("survey",)


@admin.register(Report)
class ReportAdmin(JobLabels, admin.ModelAdmin):
    """Reports are started from here (or from a survey's actions) and downloaded as files."""

    list_display = (
        "id", "survey", "status_shown", "progress_shown", "requested_by", "created_at",
        "downloads",
    )  # fmt: skip
    list_filter = (STATUS_FILTER, "organisation")
    search_fields = ("survey__title",)
    form = StartReportForm

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ("survey",)
        return ("organisation", "survey", "downloads", *JOB_FIELDS)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return () if obj is None else self.get_fields(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # The change list only (a report's page is read-only), and only with a permission.
        return obj is None and (
            super().has_change_permission(request) or super().has_view_permission(request)
        )

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "survey":
            # Neither drafts (no answers yet) nor purged surveys (no answers any more).
            kwargs["queryset"] = Survey.objects.exclude(status=Survey.Status.DRAFT).filter(
                purged_at__isnull=True
            )
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def save_model(self, request: HttpRequest, obj: Report, form: Any, change: bool) -> None:
        # Through the service, so the job is queued and audited like an API request.
        created = report_create(
            organisation=obj.survey.consultation.organisation,
            survey=obj.survey,
            requested_by=staff_actor(request),
        )
        obj.pk = created.pk
        obj.refresh_from_db()

    def response_add(
        self, request: HttpRequest, obj: Report, post_url_continue: Any = None
    ) -> HttpResponse:
        self.message_user(
            request,
            str(_("Report %(id)s of “%(survey)s” was queued."))
            % {"id": obj.pk, "survey": obj.survey},
            messages.SUCCESS,
        )
        return super().response_post_save_add(request, obj)

    @admin.display(description=_("downloads"))
    def downloads(self, report: Report) -> str:
        if report.status != Job.Status.SUCCEEDED:
            return "—"
        url = reverse("admin-report-download", args=[report.pk])
        table = reverse("admin-report-export", args=[report.pk])
        # The report (HTML page, CSV, JSON), then its table: alone (CSV), with the
        # columns' meaning and the notes (ZIP), or as a workbook (XLSX).
        return format_html(
            '{}: <a href="{}?format=html">HTML</a> · <a href="{}?format=csv">CSV</a> · '
            '<a href="{}?format=json">JSON</a> · {}: <a href="{}?format=csv">CSV</a> · '
            '<a href="{}?format=zip" title="{}">ZIP</a> · <a href="{}?format=xlsx">XLSX</a>',
            _("report"), url, url, url, _("table"), table, table,
            _("the table, what each column means and the notes"), table,
        )  # fmt: skip


# Reports are started from the survey list too. The action lives here, with the other
# report views, so that surveys (a lower layer) never imports reconstruction's services:
# this app's admin extends the survey admin instead.
admin.site.unregister(Survey)


@admin.register(Survey)
class SurveyReportAdmin(SurveyAdmin):
    actions = [*SurveyAdmin.actions, "start_report"]

    def has_report_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("reconstruction.add_report"))

    @admin.action(description=_("Start a report of the selected surveys"), permissions=["report"])
    def start_report(self, request: HttpRequest, queryset: QuerySet[Survey]) -> None:
        for survey in queryset.select_related("consultation__organisation"):
            try:
                report = report_create(
                    organisation=survey.consultation.organisation,
                    survey=survey,
                    requested_by=staff_actor(request),
                )
            except SurveyPurged as exc:
                self.message_user(request, f"{survey}: {exc.detail}", level=messages.ERROR)
                continue
            self.message_user(
                request,
                str(_("Report %(id)s of “%(survey)s” was queued; see Reports."))
                % {"id": report.pk, "survey": survey},
                level=messages.SUCCESS,
            )
