"""Background jobs: requested through the API, run by a Celery worker, read back later."""

from __future__ import annotations

from django.apps import apps
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.translation import gettext_lazy as _

from consultations.models import Organisation


class Job(models.Model):
    """What every background job records: who asked, how far it got, what it found.

    A job moves ``queued → running → succeeded | failed | refused``; ``refused`` means
    it ran but disclosure control forbids publishing its result (the error names the
    threshold, never a below-threshold number). A redelivered job
    (worker killed mid-run) goes from ``running`` to ``running`` again. The
    result is written once: finished jobs are never run again.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        SUCCEEDED = "succeeded", "succeeded"
        FAILED = "failed", "failed"
        REFUSED = "refused", "refused"

    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.REFUSED)

    organisation = models.ForeignKey(
        Organisation, on_delete=models.CASCADE, related_name="+", verbose_name=_("organisation")
    )
    requested_by = models.CharField(
        max_length=150, help_text="API key prefix or staff username", verbose_name=_("requested by")
    )
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.QUEUED, verbose_name=_("status")
    )
    progress = models.FloatField(default=0.0, verbose_name=_("progress"))
    result = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_message = models.JSONField(
        null=True,
        blank=True,
        help_text="The error as a translatable template and its parameters (shown in the "
        "reader's language); empty for errors stored before it existed, shown as 'error'.",
    )
    attempts = models.PositiveIntegerField(default=0, verbose_name=_("attempts"))
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    wal_lsn = models.CharField(
        max_length=32,
        blank=True,
        help_text="The primary's WAL position when the job was queued (PostgreSQL): a "
        "standby must have replayed it before the job reads there.",
    )
    read_from = models.CharField(
        max_length=16,
        blank=True,
        help_text="Where the job read its statistics: replica (a standby that had replayed "
        "wal_lsn), primary (the standby lagged past ANALYSIS_REPLICA_WAIT_SECONDS), or empty "
        "with one database.",
    )

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def __str__(self) -> str:
        # The admin's title, links and row labels: "Analyseauftrag 4" in German, not the
        # class name and the API's status ("AnalysisJob 4 (succeeded)").
        return f"{str(self._meta.verbose_name).capitalize()} {self.pk}"

    def error_text(self) -> str:
        """The refusal or failure reason in the active language (English if stored as text)."""
        from core.messages import translate

        if self.error_message:
            return translate(self.error_message)
        return self.error

    error_text.short_description = _("error")  # type: ignore[attr-defined]


class AggregateReconstruction(Job):
    """Reconstruct a true distribution from counts of distorted answers collected elsewhere.

    For example a paper negative survey (000_1b7f9a8e281301b4.txt) whose
    tallies the organiser types in, with the channel that was used.
    """

    counts = models.JSONField()
    channel = models.JSONField()
    method = models.CharField(max_length=16, default="em_as", verbose_name=_("method"))

    class Meta(Job.Meta):
        verbose_name = _("aggregate reconstruction")
        verbose_name_plural = _("aggregate reconstructions")
        indexes = [models.Index(fields=["status", "created_at"], name="aggrec_status_created")]


class AnalysisJob(Job):
    """A count, mean, distribution or participant sample over one survey (api.md, Analyses).

    ``spec`` is the validated request as the analyst sent it (categories as labels);
    it is what the audit trail and a re-run see.

    ``kind`` names an entry of :mod:`reconstruction.registry`; the registry, not a
    list here, decides which kinds exist, so registering a kind needs no migration
    (:meth:`clean` checks it; the database only refuses an empty kind).
    """

    survey = models.ForeignKey(
        "surveys.Survey",
        on_delete=models.CASCADE,
        related_name="analyses",
        verbose_name=_("survey"),
    )
    kind = models.CharField(
        max_length=16, help_text="A kind of reconstruction.registry", verbose_name=_("kind")
    )
    spec = models.JSONField()
    attachment = models.TextField(
        blank=True,
        help_text="A CSV table that comes with the result (a panel's selection probabilities)",
    )

    class Meta(Job.Meta):
        verbose_name = _("analysis job")
        verbose_name_plural = _("analysis jobs")
        indexes = [
            models.Index(fields=["status", "created_at"], name="analysis_status_created"),
            models.Index(fields=["organisation", "-created_at"], name="analysis_org_created"),
        ]
        constraints = [
            models.CheckConstraint(condition=~models.Q(kind=""), name="analysis_kind_not_empty")
        ]

    def clean(self) -> None:
        """Refuse a kind the registry does not know (what a check constraint did before).

        The registry imports this module, so it is read through the app's config
        (``ReconstructionConfig.ready``), not imported.
        """
        super().clean()
        kinds = apps.get_app_config("reconstruction").analysis_kinds
        if self.kind not in kinds:
            raise ValidationError(
                {"kind": f"unknown kind {self.kind!r}; choose one of {', '.join(kinds)}"}
            )


class Report(Job):
    """Every question of a survey reconstructed, with intervals, charts and suppression.

    ``result`` holds the JSON form; the HTML (charts embedded) and CSV forms are
    rendered once by the worker so downloads are plain reads.
    """

    survey = models.ForeignKey(
        "surveys.Survey", on_delete=models.CASCADE, related_name="reports", verbose_name=_("survey")
    )
    html = models.TextField(blank=True)
    csv = models.TextField(blank=True)
    # The HTML in the other languages ({code: html}): the organisation's languages are
    # rendered with the report, any other on its first download (a download never
    # renders charts twice).
    renderings = models.JSONField(default=dict, blank=True, editable=False)

    class Meta(Job.Meta):
        verbose_name = _("report")
        verbose_name_plural = _("reports")
        indexes = [models.Index(fields=["status", "created_at"], name="report_status_created")]
