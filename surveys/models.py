"""Surveys, their questions, and the distorted answers portals submit.

Privacy rules kept by the schema itself (/work/shared/design/architecture.md):

* there is no column for a true answer, a name, an e-mail, an IP address or a user agent;
  a participant is the portal's pseudonymous reference;
* timestamps of residents' actions are coarsened to the hour (a check constraint);
* one response per participant per survey (a unique constraint), and a withdrawn
  response stays as a tombstone without answers, so nobody can answer twice and average
  the noise away.

Answers are typed rows, one per (response, question): a small-integer category code for
discrete questions or a float for continuous ones, so that counting reported codes is one
``GROUP BY`` over the ``(question, code)`` index and a question's answers load straight
into a numpy array.
"""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models.functions import TruncHour
from django.utils.translation import gettext_lazy as _

from consultations.models import Consultation
from privacy.mechanisms.descriptors import CONTINUOUS, DISCRETE, NEGATIVE

DISCRETE_TYPES = ("binary", "nominal", "ordinal")
# The mechanism lists come from the descriptors (privacy.mechanisms.descriptors), in the
# order the check constraint's migrations spell them.
DISCRETE_MECHANISMS = tuple(DISCRETE)
NEGATIVE_MECHANISMS = NEGATIVE
CONTINUOUS_MECHANISMS = tuple(CONTINUOUS)
MAX_CATEGORIES = 100
# A finite float: PostgreSQL orders NaN above every number, so this also rejects NaN.
FLOAT_LIMIT = 1e300
MAX_RETENTION_DAYS = 36_500
"""The longest retention period a survey may set (100 years; null keeps the answers)."""


class Survey(models.Model):
    class Kind(models.TextChoices):
        PROFILE = "profile", "profile"
        OPINION = "opinion", "opinion"

    class Status(models.TextChoices):
        DRAFT = "draft", "draft"
        OPEN = "open", "open"
        CLOSED = "closed", "closed"

    consultation = models.ForeignKey(
        Consultation,
        on_delete=models.PROTECT,
        related_name="surveys",
        verbose_name=_("consultation"),
    )
    kind = models.CharField(max_length=16, choices=Kind.choices, verbose_name=_("kind"))
    title = models.CharField(max_length=200, verbose_name=_("title"))
    status = models.CharField(
        max_length=16, choices=Status.choices, default=Status.DRAFT, verbose_name=_("status")
    )
    created_at = models.DateTimeField(auto_now_add=True, verbose_name=_("created at"))
    opened_at = models.DateTimeField(null=True, blank=True, verbose_name=_("opened at"))
    closed_at = models.DateTimeField(null=True, blank=True, verbose_name=_("closed at"))
    # Days after closing until the distorted answers are purged (surveys.retention);
    # None keeps them. purged_at: when they were (then new analyses answer 410).
    retention_days = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_RETENTION_DAYS)],
        verbose_name=_("retention (days after closing)"),
    )
    purged_at = models.DateTimeField(
        null=True, blank=True, editable=False, verbose_name=_("purged at")
    )

    class Meta:
        verbose_name = _("survey")
        verbose_name_plural = _("surveys")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["consultation", "kind", "status"])]
        constraints = [
            models.UniqueConstraint(
                fields=["consultation"],
                condition=models.Q(kind="profile"),
                name="survey_one_profile_per_consultation",
                violation_error_message="This consultation already has a profile survey.",
            ),
            models.CheckConstraint(
                condition=models.Q(kind__in=["profile", "opinion"]), name="survey_kind_valid"
            ),
            models.CheckConstraint(
                condition=models.Q(status__in=["draft", "open", "closed"]),
                name="survey_status_valid",
            ),
            models.CheckConstraint(
                condition=models.Q(retention_days__isnull=True) | models.Q(retention_days__gte=1),
                name="survey_retention_days_at_least_1",
                violation_error_message="retention_days must be at least 1.",
            ),
        ]

    def __str__(self) -> str:
        # Its title: the admin shows kind and status in the organiser's words beside it (the
        # API's "(profile, open)" read as raw words in every survey menu and breadcrumb).
        return self.title

    @property
    def organisation_id(self) -> int:
        return self.consultation.organisation_id


class Question(models.Model):
    """One question with its privacy mechanism; frozen once the survey opens.

    ``n_categories`` is the number of categories of a discrete question (0 for a
    continuous one); answers and calibration pairs copy it, and the database keeps the
    copy honest (PostgreSQL: a composite foreign key ``(question, n_categories)`` for
    calibration pairs, a statement-level trigger for answers, migration 0007; SQLite:
    row triggers), so that ``0 <= code < n_categories`` is a plain check constraint on
    the answer row.
    """

    class Type(models.TextChoices):
        BINARY = "binary", "binary"
        NOMINAL = "nominal", "nominal"
        ORDINAL = "ordinal", "ordinal"
        CONTINUOUS = "continuous", "continuous"

    survey = models.ForeignKey(
        Survey, on_delete=models.CASCADE, related_name="questions", verbose_name=_("survey")
    )
    key = models.CharField(max_length=64)
    text = models.CharField(max_length=500, blank=True)
    type = models.CharField(max_length=16, choices=Type.choices)
    required = models.BooleanField(default=True)
    categories = models.JSONField(default=list, blank=True)
    n_categories = models.PositiveSmallIntegerField(default=0, editable=False)
    range_low = models.FloatField(null=True, blank=True)
    range_high = models.FloatField(null=True, blank=True)
    # Continuous questions only: the true values lie on low, low + step, ..., high
    # (1 for whole years); the engine models them there (issue 10). Nullable without a
    # default for the same reason as ``translations`` below.
    step = models.FloatField(null=True, blank=True)
    # Continuous questions with noise created since issue 31: the reporting grid
    # range_low + k * resolution on which clients round and add discrete noise
    # (privacy.mechanisms.grid); the server accepts grid reports only. NULL: a question
    # created before the grid, whose reports were collected under the old continuous
    # law and are accepted as before. Nullable without a default (plain ALTER TABLE).
    resolution = models.FloatField(null=True, blank=True)
    mechanism = models.CharField(max_length=32)
    mechanism_params = models.JSONField(default=dict, blank=True)
    # {"de": {"text": "...", "labels": ["...", ...]}}: one label per category, in order;
    # the organisation's languages only (surveys.schemes.translations_error). Nullable
    # without a default so that adding it is a plain ALTER TABLE (SQLite keeps the
    # answer triggers that a table rebuild would break); None reads as {}.
    translations = models.JSONField(null=True, blank=True)
    # Issue 28: {"survey": S, "question": K} when this question asks again an earlier
    # question of the same consultation (same categories and mechanism): the client
    # re-sends its memoised report, the server checks it equals the earlier one and
    # charges no privacy budget. Nullable without a default, as ``translations``.
    reuse = models.JSONField(null=True, blank=True)
    position = models.PositiveSmallIntegerField()

    class Meta:
        verbose_name = _("question")
        verbose_name_plural = _("questions")
        ordering = ["survey", "position"]
        constraints = [
            models.UniqueConstraint(fields=["survey", "key"], name="question_key_unique"),
            models.UniqueConstraint(fields=["survey", "position"], name="question_position_unique"),
            # Target of the composite foreign keys from answers and calibration pairs.
            models.UniqueConstraint(fields=["id", "n_categories"], name="question_id_k_unique"),
            models.CheckConstraint(
                condition=(
                    models.Q(
                        type__in=DISCRETE_TYPES,
                        n_categories__gte=2,
                        n_categories__lte=MAX_CATEGORIES,
                        range_low__isnull=True,
                        range_high__isnull=True,
                        mechanism__in=DISCRETE_MECHANISMS,
                    )
                    | models.Q(
                        type="continuous",
                        n_categories=0,
                        range_low__isnull=False,
                        range_high__isnull=False,
                        range_low__lt=models.F("range_high"),
                        mechanism__in=CONTINUOUS_MECHANISMS,
                    )
                ),
                name="question_type_shape_and_mechanism",
                violation_error_message=(
                    "A discrete question needs 2 or more categories and a discrete mechanism; "
                    "a continuous one a range low < high and a continuous mechanism."
                ),
            ),
            models.CheckConstraint(
                condition=~models.Q(type="binary") | models.Q(n_categories=2),
                name="question_binary_has_two_categories",
            ),
            models.CheckConstraint(
                condition=~models.Q(mechanism__in=NEGATIVE_MECHANISMS)
                | models.Q(n_categories__gte=3),
                name="question_negative_needs_three_categories",
            ),
        ]

    def __str__(self) -> str:
        # A response's answers list it by its text and key (not "(binary, randomised_response)").
        return f"{self.text} ({self.key})" if self.text else self.key

    @property
    def is_discrete(self) -> bool:
        return self.type != self.Type.CONTINUOUS


class Participant(models.Model):
    """A pseudonymous reference chosen by the portal, within one consultation.

    The same reference answers the consultation's profile survey (a candidate for the
    participant sample) and its opinion surveys, which is how their answers are joined.
    Nothing else about the person is stored.
    """

    # PostgreSQL checks this reference per statement (migration 0009), SQLite by its key.
    # No index of its own: the unique (consultation, reference) leads with it (0010).
    consultation = models.ForeignKey(
        Consultation,
        on_delete=models.CASCADE,
        related_name="participants",
        db_index=False,
        db_constraint=False,
        verbose_name=_("consultation"),
    )
    reference = models.CharField(max_length=64)

    class Meta:
        verbose_name = _("participant")
        verbose_name_plural = _("participants")
        constraints = [
            models.UniqueConstraint(
                fields=["consultation", "reference"], name="participant_reference_unique"
            ),
            models.CheckConstraint(
                condition=models.Q(reference__regex=r"^[A-Za-z0-9_-]{1,64}$"),
                name="participant_reference_format",
            ),
        ]

    def __str__(self) -> str:
        return self.reference


class Response(models.Model):
    """One participant's distorted answers to one survey.

    ``submitted_at`` is coarsened to the hour. A withdrawal deletes the answers and keeps
    this row as a tombstone (``withdrawn_at`` set) so the participant cannot answer again.
    """

    # PostgreSQL checks both references per statement (migration 0009: one set-based
    # check per bulk batch instead of one per row), SQLite by its foreign keys.
    # No index of its own: the unique (survey, participant) leads with it (0010).
    survey = models.ForeignKey(
        Survey,
        on_delete=models.CASCADE,
        related_name="responses",
        db_index=False,
        db_constraint=False,
        verbose_name=_("survey"),
    )
    participant = models.ForeignKey(
        Participant,
        on_delete=models.CASCADE,
        related_name="responses",
        db_index=False,
        db_constraint=False,
    )
    submitted_at = models.DateTimeField()
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    # SHA-256 of the withdrawal token handed to the participant once, at submission: only
    # the participant can withdraw (a guessed reference withdraws nothing).
    withdrawal_token_hash = models.CharField(max_length=64, blank=True, default="", editable=False)
    # The cell-key method's record key (issue 26, privacy.mechanisms.cellkey): uniform on
    # [0, 2**32), drawn at submission, summed per cell in the statistics' GROUP BY, never
    # published. Nullable without a default (a plain ALTER TABLE; migration 0018 fills
    # the rows that existed).
    record_key = models.BigIntegerField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = _("response")
        verbose_name_plural = _("responses")
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["survey", "participant"], name="response_one_per_participant"
            ),
            models.CheckConstraint(
                condition=models.Q(submitted_at=TruncHour("submitted_at")),
                name="response_submitted_at_coarsened_to_hour",
            ),
            models.CheckConstraint(
                condition=models.Q(withdrawn_at__isnull=True)
                | models.Q(withdrawn_at=TruncHour("withdrawn_at")),
                name="response_withdrawn_at_coarsened_to_hour",
            ),
        ]
        indexes = [
            # The (few) withdrawn responses: whether a survey has any is one probe, so the
            # statistics leave out their anti-join when it has none (surveys/joins.py).
            models.Index(
                fields=["survey"],
                condition=models.Q(withdrawn_at__isnull=False),
                name="response_withdrawn",
            ),
            # The cell-key method's key sums (issue 26) join each counted answer to its
            # response by id: with the key beside the id PostgreSQL reads it from this
            # index alone (bench/bench_cellkey.py scale measures it at 10^6). Covering
            # indexes are PostgreSQL's; SQLite skips it.
            models.Index(fields=["id"], include=["record_key"], name="response_record_key"),
            # The live responses of a survey in id order with their participant: a
            # change's pairs meet their answers in merges of index-only scans
            # (surveys/pairs.py), and a survey's live responses are counted from it.
            models.Index(
                fields=["survey", "id"],
                include=["participant"],
                condition=models.Q(withdrawn_at__isnull=True),
                name="response_live_participant",
            ),
        ]

    def __str__(self) -> str:
        return f"response {self.pk} to survey {self.survey_id}"


class Answer(models.Model):
    """A distorted answer: a category code (discrete) or a float (continuous), never both.

    Keyed by ``(response, question)``, one answer per question of a response, with no
    surrogate ``id`` (migration 0010): a bulk batch writes 70,000 answers, and every
    answer costs an entry in each index plus, with an ``id``, a sequence value.
    """

    pk = models.CompositePrimaryKey("response", "question")

    # No per-row foreign-key constraints on PostgreSQL: statement-level triggers check
    # that every answer's response and (question_id, n_categories) exist, once per
    # statement instead of once per row (migration 0007; 70,000 answers per bulk batch).
    # SQLite keeps the key to the response and the n_categories triggers of 0002.
    response = models.ForeignKey(
        Response,
        on_delete=models.CASCADE,
        related_name="answers",
        db_index=False,
        db_constraint=False,
    )
    question = models.ForeignKey(
        Question,
        on_delete=models.PROTECT,
        related_name="answers",
        db_index=False,
        db_constraint=False,
    )
    code = models.SmallIntegerField(null=True, blank=True)
    value = models.FloatField(null=True, blank=True)
    # A copy of the question's n_categories (0 for continuous), bound to it by a
    # statement-level trigger (PostgreSQL, 0007) or a row trigger (SQLite, 0002).
    n_categories = models.PositiveSmallIntegerField()

    class Meta:
        verbose_name = _("answer")
        verbose_name_plural = _("answers")
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(
                        code__isnull=False,
                        value__isnull=True,
                        code__gte=0,
                        code__lt=models.F("n_categories"),
                    )
                    | models.Q(
                        code__isnull=True,
                        n_categories=0,
                        value__isnull=False,
                        value__gte=-FLOAT_LIMIT,
                        value__lte=FLOAT_LIMIT,
                    )
                ),
                name="answer_code_in_range_xor_finite_value",
            ),
        ]
        # The statistics read a question's answers in response order (merge joins of
        # index-only scans, surveys/statistics.py): the covering index holds what they read.
        indexes = [
            models.Index(
                fields=["question", "response"],
                include=["code", "value"],
                name="answer_question_response",
            )
        ]

    def __str__(self) -> str:
        return f"{self.question_id}: {self.code if self.code is not None else self.value}"


class CalibrationPair(models.Model):
    """A (true, negative) category pair of a consenting calibration participant.

    They estimate rows of a manually selected negative survey's channel
    (000_1b7f9a8e281301b4.txt, Section 4.1). No participant reference is kept.
    """

    question = models.ForeignKey(
        Question, on_delete=models.CASCADE, related_name="calibration_pairs"
    )
    true_code = models.SmallIntegerField()
    negative_code = models.SmallIntegerField()
    n_categories = models.PositiveSmallIntegerField()
    uploaded_at = models.DateTimeField()

    class Meta:
        verbose_name = _("calibration pair")
        verbose_name_plural = _("calibration pairs")
        ordering = ["question", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(
                    true_code__gte=0,
                    true_code__lt=models.F("n_categories"),
                    negative_code__gte=0,
                    negative_code__lt=models.F("n_categories"),
                )
                & ~models.Q(true_code=models.F("negative_code")),
                name="calibration_codes_in_range_and_distinct",
            ),
            models.CheckConstraint(
                condition=models.Q(uploaded_at=TruncHour("uploaded_at")),
                name="calibration_uploaded_at_coarsened_to_hour",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.question_id}: {self.true_code} -> {self.negative_code}"


class ResponseTally(models.Model):
    """Running counts of live responses and answers, so a threshold check reads no answer.

    ``POST /analyses/`` checks that enough participants answered before it queues a job
    (002_f0fd5869fe299975.txt, the question-level threshold). Counting joined answers
    grows with the number of participants; these counters do not: the check sums a few
    rows whatever ``n`` is (:mod:`surveys.tallies`).

    One row per ``(question_id, survey, shard)``: ``question_id`` 0 counts the survey's
    live responses, any other id the live answers to that question. Every write that adds
    or removes answers (submission, bulk ingest, withdrawal) adds its delta in the same
    transaction with ``INSERT ... ON CONFLICT DO UPDATE``; writers pick a random
    ``shard`` so concurrent submissions rarely wait on the same row. The total is the sum
    over shards (a shard may go negative after withdrawals).
    """

    question_id = models.BigIntegerField(help_text="0: the survey's live responses")
    survey = models.ForeignKey(
        Survey, on_delete=models.CASCADE, related_name="+", verbose_name=_("survey")
    )
    shard = models.PositiveSmallIntegerField()
    count = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = _("response tally")
        verbose_name_plural = _("response tallies")
        constraints = [
            models.UniqueConstraint(
                fields=["question_id", "survey", "shard"], name="response_tally_key"
            )
        ]

    def __str__(self) -> str:
        return f"tally survey {self.survey_id} question {self.question_id}: {self.count}"


class PrivacyLedger(models.Model):
    """What one resident has spent of their consultation's privacy budget (issue 28).

    One row per ``(consultation, reference)``, kept only while the consultation has a
    budget. Every submission adds its ε in the same transaction as its answers with
    ``INSERT ... ON CONFLICT DO UPDATE SET spent = spent + ...``, which locks the row, so
    two submissions for one resident are serialised and the second sees the first's
    spending (:mod:`surveys.privacy_budget`). A withdrawal refunds nothing: the reports
    were seen.
    """

    consultation = models.ForeignKey(
        Consultation,
        on_delete=models.CASCADE,
        related_name="+",
        db_index=False,
        # No per-row key check on the hot path (10,000 rows per bulk batch); the ledger
        # is only written for a consultation the submission's survey belongs to.
        db_constraint=False,
        verbose_name=_("consultation"),
    )
    reference = models.CharField(max_length=64)
    spent = models.FloatField(default=0.0)

    class Meta:
        verbose_name = _("privacy ledger entry")
        verbose_name_plural = _("privacy ledger")
        constraints = [
            models.UniqueConstraint(
                fields=["consultation", "reference"], name="privacy_ledger_one_per_resident"
            ),
            models.CheckConstraint(
                condition=models.Q(spent__gte=0), name="privacy_ledger_spent_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.reference}: ε {self.spent:g}"
