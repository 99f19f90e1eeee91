"""Input and output shapes of the surveys API.

Questions are validated by :func:`surveys.schemes.parse_questions` (the same rules the
services apply), and submitted responses by the services' fast path, so the serializers
here check the envelope and describe the shapes for the OpenAPI schema.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from core.strict import JSONIntegerField, StrictFieldsMixin
from surveys import schemes
from surveys.models import MAX_RETENTION_DAYS, Question, Survey
from surveys.services import MAX_BULK, MAX_CALIBRATION_PAIRS, question_limits

# --------------------------------------------------------------------------- documentation

MECHANISM_SCHEMA = {
    "type": "object",
    "description": (
        "`name` and its parameters. Discrete: none; randomised_response (retain in (0, 1] "
        "or a k x k row-stochastic matrix); negative_uniform; negative_gaussian (sigma > 0, "
        "ordinal only); negative_manual. Continuous: none; additive_uniform (half_width); "
        "additive_gaussian (sigma); additive_laplace (scale); additive_staircase (epsilon > 0, "
        "sensitivity > 0: the staircase noise of Geng & Viswanath 2016, the optimal additive "
        "noise for epsilon-differential privacy; epsilon-LDP when sensitivity >= the range's "
        "width, with far less noise than Laplace of scale sensitivity/epsilon; an extension "
        "of api.md); retention_replacement (retain)."
    ),
    "properties": {
        "name": {
            "type": "string",
            "enum": sorted(set(schemes.DISCRETE_MECHANISMS) | set(schemes.CONTINUOUS_MECHANISMS)),
        },
        "retain": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1},
        "matrix": {"type": "array", "items": {"type": "array", "items": {"type": "number"}}},
        "sigma": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "half_width": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "scale": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
        "epsilon": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 500},
        "sensitivity": {"type": "number", "minimum": 0, "exclusiveMinimum": True},
    },
    "required": ["name"],
    "additionalProperties": False,
}
TRANSLATIONS_SCHEMA = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {
            "text": {"type": "string", "maxLength": schemes.MAX_TEXT_LENGTH},
            "labels": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    },
}
ANSWER_SCHEMA = {
    "description": "A category label (discrete question) or a finite number (continuous).",
    "oneOf": [{"type": "string"}, {"type": "number"}],
}


@extend_schema_field(MECHANISM_SCHEMA)
class MechanismField(serializers.JSONField):
    pass


REUSE_SCHEMA = {
    "type": "object",
    "nullable": True,
    "properties": {
        "survey": {"type": "integer", "minimum": 1},
        "question": {"type": "string", "pattern": rf"^{schemes.KEY_PATTERN.pattern}$"},
    },
    "required": ["survey", "question"],
    "additionalProperties": False,
}


@extend_schema_field(REUSE_SCHEMA)
class ReuseField(serializers.JSONField):
    pass


@extend_schema_field(TRANSLATIONS_SCHEMA)
class TranslationsField(serializers.JSONField):
    pass


class QuestionDocSerializer(serializers.Serializer):
    """A question as the API receives it (validated by :func:`surveys.schemes.parse_question`,
    which refuses unknown fields: the schema says ``additionalProperties: false``)."""

    refuses_unknown_fields = True

    key = serializers.RegexField(
        rf"^{schemes.KEY_PATTERN.pattern}$", help_text="Unique in the survey."
    )
    text = serializers.CharField(required=False, allow_blank=True, max_length=500)
    type = serializers.ChoiceField(choices=schemes.QUESTION_TYPES)
    required = serializers.BooleanField(required=False, default=True)
    categories = serializers.ListField(
        child=serializers.CharField(max_length=schemes.MAX_LABEL_LENGTH),
        required=False,
        min_length=2,
        max_length=schemes.MAX_CATEGORIES,
        help_text="Discrete questions: distinct labels, in order (codes 0..k-1).",
    )
    range = serializers.ListField(
        child=serializers.FloatField(),
        required=False,
        min_length=2,
        max_length=2,
        help_text="Continuous questions: [low, high] with low < high.",
    )
    step = serializers.FloatField(
        required=False,
        help_text=(
            "Continuous questions, optional: the true values lie on the lattice low, "
            "low + step, ..., high (1 for whole years); the range must be a whole number of "
            "steps. Thresholds then apply on the lattice: age <= 30 counts 30. Without a "
            "step, whole-number answers under bounded noise (none, additive_uniform) are "
            "found in the reports and modelled as step 1, with a note on the result; where "
            "the reports cannot settle it (up to about 30,000 answers), a count averages "
            "both models and its note gives the weight. Under Gaussian or Laplace noise "
            "they cannot be told from real values, so declare the step: results with a "
            "threshold on a whole number of such a question are otherwise biased (about "
            "-6% for age <= 30 in whole years) and carry a note saying so."
        ),
    )
    resolution = serializers.FloatField(
        required=False,
        help_text=(
            "Continuous questions with noise, optional: the reporting grid low + k * "
            "resolution (defaults to step, else the range's width / 10^4; the range must be a "
            "whole number of resolutions, at most 10^6 of them). Clients round the true value "
            "to the grid at random (unbiased) and add noise drawn exactly on it (discrete "
            "Laplace, Gaussian, staircase or uniform); the server refuses reports off the "
            "grid and stores grid values."
        ),
    )
    mechanism = MechanismField()
    reuse = ReuseField(
        required=False,
        help_text=(
            'Ask again an earlier question of the same consultation: {"survey": S, '
            '"question": "key"}, with the same type, categories and mechanism (and range '
            "and grid). The client kit re-sends the report it kept from then (permanent "
            "randomisation); the server refuses a different report (409) and charges no "
            "privacy budget for it. Not for questions answered as given (none, "
            "negative_manual)."
        ),
    )
    translations = TranslationsField(
        required=False,
        help_text=(
            'Per language of the organisation: {"de": {"text": "...", "labels": [...]}}, one '
            "label per category in order (discrete questions). Portals show them; answers "
            "stay the category values."
        ),
    )

    class Meta:
        ref_name = "QuestionInput"


@extend_schema_field(QuestionDocSerializer(many=True))
class QuestionListField(serializers.Field):
    """A list of questions, validated with the services' rules (errors per item)."""

    def to_internal_value(self, data: Any) -> list[dict[str, Any]]:
        try:
            schemes.parse_questions(data, **question_limits())
        except schemes.QuestionListInvalid as exc:
            raise serializers.ValidationError(exc.errors) from None
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class QuestionSerializer(serializers.ModelSerializer):
    range = serializers.SerializerMethodField()
    mechanism = serializers.SerializerMethodField()
    categories = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Question
        fields = [
            "key", "text", "type", "required", "categories", "range", "step", "resolution",
            "mechanism", "translations", "reuse",
        ]  # fmt: skip
        read_only_fields = fields
        extra_kwargs = {"reuse": {"help_text": "The earlier question asked again, or null."}}

    @extend_schema_field(
        {
            "type": "array",
            "items": {"type": "number"},
            "nullable": True,
            "minItems": 2,
            "maxItems": 2,
        }
    )
    def get_range(self, question: Question) -> list[float] | None:
        if question.is_discrete:
            return None
        return [question.range_low, question.range_high]

    @extend_schema_field(MECHANISM_SCHEMA)
    def get_mechanism(self, question: Question) -> dict[str, Any]:
        return schemes.mechanism_json(question.mechanism, question.mechanism_params)


RETENTION_HELP = (
    "Days after the survey closes until its distorted answers are purged (a whole number "
    f">= 1, at most {MAX_RETENTION_DAYS}; null keeps them). Results and reports already made "
    "stay; see POST /surveys/{id}/purge/."
)


def retention_days_field(**kwargs: Any) -> JSONIntegerField:
    return JSONIntegerField(
        min_value=1,
        max_value=MAX_RETENTION_DAYS,
        allow_null=True,
        required=False,
        help_text=RETENTION_HELP,
        **kwargs,
    )


class SurveySerializer(serializers.ModelSerializer):
    questions = QuestionSerializer(many=True, read_only=True)
    response_count = serializers.SerializerMethodField(
        help_text="Responses that have not been withdrawn."
    )

    class Meta:
        model = Survey
        fields = [
            "id",
            "consultation",
            "kind",
            "title",
            "status",
            "created_at",
            "opened_at",
            "closed_at",
            "retention_days",
            "purged_at",
            "response_count",
            "questions",
        ]
        read_only_fields = fields
        extra_kwargs = {
            "retention_days": {"help_text": RETENTION_HELP},
            "purged_at": {
                "help_text": "When the distorted answers were purged (null: kept); new "
                "analyses and reports of a purged survey answer 410."
            },
        }

    def get_response_count(self, survey: Survey) -> int:
        count = getattr(survey, "response_count", None)
        if count is None:
            count = survey.responses.filter(withdrawn_at__isnull=True).count()
        return int(count)


SURVEY_UNKNOWN_FIELD = gettext_lazy("Unknown field; a survey has %(fields)s.")


class SurveyInputSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = SURVEY_UNKNOWN_FIELD
    consultation = JSONIntegerField(min_value=1)
    kind = serializers.ChoiceField(choices=Survey.Kind.choices)
    title = serializers.CharField(max_length=200)
    questions = QuestionListField(required=False, default=list)
    retention_days = retention_days_field()


class SurveyUpdateSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = SURVEY_UNKNOWN_FIELD
    repeatable_fields = (
        "id", "status", "created_at", "opened_at", "closed_at", "purged_at", "response_count",
    )  # fmt: skip
    consultation = JSONIntegerField(
        min_value=1, required=False, help_text="Cannot change; may be repeated."
    )
    kind = serializers.ChoiceField(
        choices=Survey.Kind.choices, required=False, help_text="Cannot change; may be repeated."
    )
    title = serializers.CharField(max_length=200, required=False)
    questions = QuestionListField(
        required=False, help_text="Replaces all questions; only while the survey is a draft."
    )
    retention_days = retention_days_field()


class SurveyFilterSerializer(serializers.Serializer):
    # A database id is a positive 64-bit integer; beyond it the query overflowed (a 500).
    consultation = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
    kind = serializers.ChoiceField(choices=Survey.Kind.choices, required=False)
    status = serializers.ChoiceField(choices=Survey.Status.choices, required=False)


# --------------------------------------------------------------------------- scheme


class SchemeQuestionSerializer(serializers.Serializer):
    key = serializers.CharField()
    text = serializers.CharField()
    type = serializers.ChoiceField(choices=schemes.QUESTION_TYPES)
    required = serializers.BooleanField()
    categories = serializers.ListField(child=serializers.CharField(), required=False)
    range = serializers.ListField(child=serializers.FloatField(), required=False)
    mechanism = MechanismField()
    channel = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField()),
        required=False,
        help_text="C[i][j] = Pr(report category j | true category i), in categories order.",
    )
    epsilon = serializers.FloatField(
        required=False,
        allow_null=True,
        help_text=(
            "Local differential privacy; null if unbounded. Discrete questions always carry "
            "it; a continuous one where its pure epsilon is finite: additive_staircase whose "
            "sensitivity covers the range, and on a reporting grid additive_laplace "
            "((high - low) / scale) and retention_replacement (ln(1 + retain * P / (1 - "
            "retain)), P the range's grid points). Gaussian and uniform noise have none."
        ),
    )
    instruction = serializers.CharField(required=False, help_text="negative_manual questions.")
    reuse = ReuseField(
        required=False,
        help_text=(
            "This question asks again that earlier question: send the report kept from "
            "then (the client kit's memo of that survey and question); it costs no budget."
        ),
    )
    resolution = serializers.FloatField(
        required=False, help_text="The reporting grid's step (continuous questions with noise)."
    )
    grid = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text=(
            "Continuous questions with noise: {origin, resolution, law} where law is "
            "discrete_laplace (scale, in grid steps, an exact fraction 'n/d'), "
            "discrete_gaussian (sigma2, grid steps squared), discrete_staircase (epsilon, "
            "steps d, inner r), discrete_uniform (half_width H) or retention_replacement "
            "(retain, points N + 1); discrete_laplace adds epsilon_per_step = resolution / "
            "scale. Send origin + (j + K) * resolution computed in double arithmetic, j the "
            "randomised rounding of the true value and K the law's draw. null: a survey "
            "created before the grid (noise_note)."
        ),
    )
    noise_note = serializers.CharField(
        required=False, help_text="Surveys created before the reporting grid: the old law."
    )


class SchemeSerializer(serializers.Serializer):
    survey = serializers.IntegerField()
    title = serializers.CharField()
    kind = serializers.CharField(help_text="profile or opinion.")
    status = serializers.CharField(help_text="draft, open or closed: submit only while open.")
    epsilon_total = serializers.FloatField(
        allow_null=True,
        help_text=(
            "What one response costs a resident's privacy budget: the sum of the questions' "
            "epsilon (mechanism none counts 0, a question asked again (reuse) counts 0); "
            "null when a sensitive question's epsilon is unbounded."
        ),
    )
    privacy_budget = serializers.FloatField(
        allow_null=True,
        help_text="The consultation's privacy budget per resident (epsilon); null: no cap.",
    )
    questions = SchemeQuestionSerializer(many=True)


# --------------------------------------------------------------------------- responses


@extend_schema_field(
    {
        "type": "string",
        "pattern": rf"^{schemes.PARTICIPANT_PATTERN.pattern}$",
        "minLength": 1,
        "maxLength": 64,
        "description": "The portal's pseudonymous reference (no name, e-mail or address).",
    }
)
class ParticipantField(serializers.Field):
    """Passed through: the service checks it (a number is not a reference)."""

    def to_internal_value(self, data: Any) -> Any:
        return data

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field(
    {
        "type": "object",
        "additionalProperties": ANSWER_SCHEMA,
        "description": "Question key -> distorted answer.",
    }
)
class AnswersField(ParticipantField):
    pass


class ResponseInputSerializer(StrictFieldsMixin, serializers.Serializer):
    # The message a bulk item's unknown field gets (``surveys.answers.check_response``).
    unknown_field_message = gettext_lazy(
        'Unknown field; a response has "participant" and "answers".'
    )
    participant = ParticipantField()
    answers = AnswersField()


@extend_schema_field(
    {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_BULK,
        "items": {
            "type": "object",
            "properties": {
                "participant": {
                    "type": "string",
                    "pattern": rf"^{schemes.PARTICIPANT_PATTERN.pattern}$",
                },
                "answers": {"type": "object", "additionalProperties": ANSWER_SCHEMA},
            },
            "required": ["participant", "answers"],
            "additionalProperties": False,
        },
    }
)
class ResponseListField(serializers.Field):
    """A list of up to 10,000 responses; items are checked by the service's fast path."""

    def to_internal_value(self, data: Any) -> list[Any]:
        if not isinstance(data, list):
            raise serializers.ValidationError(_("Must be a list of responses."))
        if not 1 <= len(data) <= MAX_BULK:
            raise serializers.ValidationError(
                _("Must hold 1 to %(limit)s responses, got %(count)s.")
                % {"limit": MAX_BULK, "count": len(data)}
            )
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class BulkInputSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = gettext_lazy("Unknown field; a bulk submission has %(fields)s.")
    responses = ResponseListField()


class SubmittedSerializer(serializers.Serializer):
    participant = serializers.CharField(help_text="The reference whose response was stored.")
    withdrawal_token = serializers.CharField(
        help_text=(
            "Shown once: the participant's proof for withdrawing this response. Only its "
            "hash is stored; keep it beside the memoised answers."
        )
    )


class BulkResultSerializer(serializers.Serializer):
    created = serializers.IntegerField()
    withdrawal_tokens = serializers.ListField(
        child=serializers.CharField(),
        help_text="One withdrawal token per response, in the order of `responses`; shown once.",
    )


@extend_schema_field(
    {"type": "string", "pattern": schemes.PARTICIPANT_PATTERN.pattern, "maxLength": 64}
)
class WithdrawalParticipantField(ParticipantField):
    pass


class WithdrawalInputSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = gettext_lazy("Unknown field; a withdrawal has %(fields)s.")
    participant = WithdrawalParticipantField(help_text="The participant's reference.")
    withdrawal_token = serializers.CharField(
        max_length=128, help_text="The token returned when the response was submitted."
    )


# --------------------------------------------------------------------------- calibration


@extend_schema_field(
    {
        "type": "array",
        "minItems": 1,
        "maxItems": MAX_CALIBRATION_PAIRS,
        "items": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2},
        "description": "[true label, negative label] pairs; the labels must differ.",
    }
)
class PairListField(ParticipantField):
    pass


@extend_schema_field(OpenApiTypes.STR)
class QuestionKeyField(ParticipantField):
    pass


class CalibrationInputSerializer(StrictFieldsMixin, serializers.Serializer):
    unknown_field_message = gettext_lazy("Unknown field; a calibration upload has %(fields)s.")
    question = QuestionKeyField(help_text="Key of a negative_manual question.")
    pairs = PairListField()


class CalibrationResultSerializer(serializers.Serializer):
    question = serializers.CharField()
    added = serializers.IntegerField()
    total = serializers.IntegerField(help_text="Pairs stored for the question in all.")


# --------------------------------------------------------------------------- privacy budget


class BudgetInputSerializer(WithdrawalInputSerializer):
    unknown_field_message = gettext_lazy("Unknown field; a budget request has %(fields)s.")
    withdrawal_token = serializers.CharField(
        max_length=128,
        help_text="Any withdrawal token the participant received in this consultation.",
    )


class BudgetSerializer(serializers.Serializer):
    budget = serializers.FloatField(
        allow_null=True, help_text="The consultation's privacy budget (epsilon); null: no cap."
    )
    spent = serializers.FloatField(
        allow_null=True,
        help_text="Epsilon the participant's stored reports cost; null without a budget "
        "(no ledger is kept then).",
    )
    remaining = serializers.FloatField(
        allow_null=True, help_text="budget - spent (never below 0); null without a budget."
    )
