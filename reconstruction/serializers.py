from __future__ import annotations

from typing import Any

import numpy as np
from django.conf import settings
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from rest_framework import serializers

from core.messages import localise_result, translate
from core.strict import JSONIntegerField, JSONNumberField, StrictFieldsMixin
from privacy.mechanisms.channels import channel_conditioning
from privacy.mechanisms.descriptors import MIN_CHANNEL_ENTRY
from reconstruction import registry
from reconstruction.algorithms.methods import DISCRETE_METHODS, check_method
from reconstruction.conditions import OPERATORS
from reconstruction.models import Job


class JobSerializer(serializers.Serializer[Job]):
    """The status view every job shares (api.md, Analyses)."""

    id = serializers.IntegerField(read_only=True)
    status = serializers.ChoiceField(choices=Job.Status.choices, read_only=True)
    progress = serializers.FloatField(read_only=True)
    result = serializers.JSONField(read_only=True, allow_null=True)
    error = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField(read_only=True)
    finished_at = serializers.DateTimeField(read_only=True, allow_null=True)
    read_from = serializers.CharField(
        read_only=True,
        help_text="Where the job read its statistics: replica (a standby that had replayed "
        "every write made before the request), primary (the standby lagged; docs/operators/"
        "scaling.md), or empty with one database.",
    )

    def get_error(self, job: Job) -> str | None:
        return job.error_text() or None

    def to_representation(self, instance: Job) -> dict[str, Any]:
        data: dict[str, Any] = super().to_representation(instance)
        if isinstance(data.get("result"), dict):  # notes in the reader's language
            data["result"] = localise_result(data["result"])
        return data


SINGULAR_CONDITION = 1e12


class AggregateReconstructionSerializer(StrictFieldsMixin, JobSerializer):
    unknown_field_message = gettext_lazy(
        "Unknown field; an aggregate reconstruction has %(fields)s."
    )
    counts = serializers.ListField(
        child=JSONNumberField(min_value=0),
        min_length=2,
        max_length=1000,
        help_text="Counts of each reported category (the distorted answers' tallies).",
    )
    channel = serializers.ListField(
        child=serializers.ListField(child=JSONNumberField(min_value=0), min_length=2),
        min_length=2,
        max_length=1000,
        help_text="C[i][j] = Pr(reported j | true i); rows sum to 1.",
    )
    method = serializers.ChoiceField(choices=DISCRETE_METHODS, default="em_as")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        counts, channel = attrs["counts"], attrs["channel"]
        if any(len(row) != len(channel) for row in channel):
            raise serializers.ValidationError(
                {"channel": _("The channel must be a square matrix.")}
            )
        if len(channel) != len(counts):
            raise serializers.ValidationError(
                {
                    "channel": _("The channel has %(rows)s rows but there are %(counts)s counts.")
                    % {"rows": len(channel), "counts": len(counts)}
                }
            )
        limit = int(settings.AGGREGATE_MAX_CATEGORIES)
        if len(counts) > limit:
            raise serializers.ValidationError(
                {
                    "counts": _(
                        "At most %(limit)s categories (AGGREGATE_MAX_CATEGORIES), got %(count)s."
                    )
                    % {"limit": limit, "count": len(counts)}
                }
            )
        if not 0 < sum(counts) <= 1e12:
            raise serializers.ValidationError(
                {"counts": _("The counts must add up to a positive total of at most 1e12.")}
            )
        tiny = [v for row in channel for v in row if 0 < v < MIN_CHANNEL_ENTRY]
        if tiny:  # issue 27: 5e-324 left the job running for ever
            raise serializers.ValidationError(
                {
                    "channel": _("matrix entries must be 0 or at least %(limit)s, got %(value)s")
                    % {"limit": f"{MIN_CHANNEL_ENTRY:g}", "value": f"{tiny[0]:g}"}
                }
            )
        try:  # the channel alone decides (no estimator runs in the request: issue 13)
            matrix = check_method(channel, attrs["method"])
            if attrs["method"] == "eq" and np.linalg.matrix_rank(matrix) < len(matrix):
                raise ValueError(
                    _(
                        "the channel matrix is singular: eq solves C^T t = r and needs an "
                        "invertible channel (001, Section III-B6); use em_as"
                    )
                )
        except ValueError as exc:
            field = "method" if "method" in str(exc) else "channel"
            raise serializers.ValidationError({field: translate(exc)}) from None
        # A (numerically) singular channel leaves the true counts unidentified: refused
        # here, not by a job that fails later (issue 27). Ill-conditioned ones below
        # SINGULAR_CONDITION stay the analyst's choice.
        conditioning = channel_conditioning(matrix, max_condition=SINGULAR_CONDITION)
        if conditioning.problem is not None:
            raise serializers.ValidationError({"channel": translate(conditioning.problem)})
        return attrs


class AnalysisFilterSerializer(serializers.Serializer[Any]):
    """``GET /analyses/`` filters: ids are positive 64-bit integers, names from their lists."""

    survey = serializers.IntegerField(
        required=False, min_value=1, max_value=2**63 - 1, help_text="only this survey's analyses"
    )
    kind = serializers.ChoiceField(choices=list(registry.KINDS), required=False)
    status = serializers.ChoiceField(choices=Job.Status.choices, required=False)


class JobCreatedSerializer(serializers.Serializer[Job]):
    id = serializers.IntegerField()
    status = serializers.CharField()
    url = serializers.CharField()


class ConditionSerializer(StrictFieldsMixin, serializers.Serializer[Any]):
    unknown_field_message = gettext_lazy("Unknown field; a condition has %(fields)s.")
    attribute = serializers.CharField(max_length=64)
    op = serializers.ChoiceField(choices=list(OPERATORS))
    value = serializers.JSONField(
        help_text="A list of categories for 'in'; a number for gt/lte; [t1, t2] for between."
    )


class StratumSerializer(StrictFieldsMixin, serializers.Serializer[Any]):
    unknown_field_message = gettext_lazy("Unknown field; a stratum has %(fields)s.")
    where = ConditionSerializer(many=True, allow_empty=False)
    size = JSONIntegerField(min_value=1)


class QuotaSerializer(StrictFieldsMixin, serializers.Serializer[Any]):
    unknown_field_message = gettext_lazy("Unknown field; a quota has %(fields)s.")
    where = ConditionSerializer(many=True, allow_empty=False, max_length=10)
    min = JSONIntegerField(min_value=0, max_value=100_000)
    max = JSONIntegerField(min_value=0, max_value=100_000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["min"] > attrs["max"]:
            raise serializers.ValidationError(
                {
                    "min": _("min %(min)s is larger than max %(max)s.")
                    % {"min": attrs["min"], "max": attrs["max"]}
                }
            )
        return attrs


PANEL_OBJECTIVES = ("maximin", "nash", "leximin")
PANEL_FIELDS = ("quotas", "reserves", "objective", "max_outside")
CHANGE_FIELDS = ("after", "after_attribute", "panel")


class AnalysisRequestSerializer(StrictFieldsMixin, serializers.Serializer[Any]):
    """api.md, Analyses: what an analyst may ask for (the kinds of ``reconstruction.registry``).

    Unknown fields are refused at every level (request, condition, stratum, quota), and
    integers must be JSON numbers (:class:`JSONIntegerField`).
    """

    unknown_field_message = gettext_lazy("Unknown field; an analysis request has %(fields)s.")
    survey = JSONIntegerField()
    kind = serializers.ChoiceField(choices=list(registry.KINDS))
    attribute = serializers.CharField(max_length=64, required=False)
    where = ConditionSerializer(many=True, required=False, max_length=20)
    method = serializers.ChoiceField(choices=registry.all_methods(), required=False)
    size = JSONIntegerField(min_value=1, max_value=100_000, required=False)
    seed = JSONIntegerField(min_value=0, max_value=2**63 - 1, required=False)
    strata = StratumSerializer(many=True, required=False, max_length=50)
    quotas = QuotaSerializer(
        many=True, required=False, max_length=50,
        help_text="panel: bands for the expected true count of members meeting each condition",
    )  # fmt: skip
    reserves = JSONIntegerField(
        min_value=0, max_value=1000, required=False,
        help_text="panel: replacements drawn in order after the panel",
    )  # fmt: skip
    objective = serializers.ChoiceField(
        choices=PANEL_OBJECTIVES, required=False,
        help_text="panel: maximin (default), nash or leximin (Flanigan et al. 2021)",
    )  # fmt: skip
    max_outside = JSONNumberField(
        min_value=0.001, max_value=100, required=False,
        help_text=(
            "panel, opt-in (an extension of api.md): every panel of the lottery keeps each "
            "quota's expected seats outside its band at most this (the realised true "
            "count's variance: Bernoulli plus the posteriors' bootstrap variance); a quota "
            "no panel can hold to it gets the next level of a ladder (x1.5, 2, 3, 5) or its "
            "plain band, named in notes and in the quota's outside_level. Costs fairness: "
            "the bands are narrower"
        ),
    )  # fmt: skip

    after = JSONIntegerField(
        min_value=1, max_value=2**63 - 1, required=False,
        help_text="change: the after survey (same consultation; `survey` is the before one)",
    )  # fmt: skip
    after_attribute = serializers.CharField(
        max_length=64, required=False,
        help_text="change: the question's key in the after survey when it differs",
    )  # fmt: skip
    panel = JSONIntegerField(
        min_value=1, max_value=2**63 - 1, required=False,
        help_text="change: restrict to the members of this succeeded panel analysis",
    )  # fmt: skip

    def get_fields(self) -> dict[str, Any]:
        # Read the registry when used, not at import: a kind registered later counts too.
        fields = super().get_fields()
        fields["kind"] = serializers.ChoiceField(choices=list(registry.KINDS))
        fields["method"] = serializers.ChoiceField(choices=registry.all_methods(), required=False)
        return fields

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind = registry.KINDS[attrs["kind"]]
        errors: dict[str, str] = {}
        if kind.attribute == "required" and not attrs.get("attribute"):
            errors["attribute"] = _("A %(kind)s needs the attribute to analyse.") % {
                "kind": kind.name
            }
        if kind.attribute == "forbidden" and attrs.get("attribute"):
            errors["attribute"] = _(
                "A %(kind)s takes no attribute; give its condition in 'where'."
            ) % {"kind": kind.name}
        if kind.needs_where and not attrs.get("where"):
            errors["where"] = _("A %(kind)s needs at least one condition.") % {"kind": kind.name}
        if kind.sampling:
            if "size" not in attrs:
                errors["size"] = _("A %(kind)s needs its size.") % {"kind": kind.name}
            strata = attrs.get("strata") or []
            if strata and "size" in attrs and sum(s["size"] for s in strata) != attrs["size"]:
                errors["strata"] = _("The strata sizes must add up to the sample size.")
        else:
            for name in ("size", "seed", "strata"):
                if name in attrs:
                    takers = _(" or ").join(k.name for k in registry.KINDS.values() if k.sampling)
                    errors[name] = _("Only a %(takers)s takes %(name)s.") % {
                        "takers": takers,
                        "name": repr(name),
                    }
        if "strata" in attrs and "quotas" in kind.request_fields:
            errors["strata"] = _("A %(kind)s takes quotas, not strata.") % {"kind": kind.name}
        if "after" in kind.request_fields and "after" not in attrs:
            errors["after"] = _("A %(kind)s needs the after survey.") % {"kind": kind.name}
        for name in (*PANEL_FIELDS, *CHANGE_FIELDS):
            if name in attrs and name not in kind.request_fields:
                takers = _(" or ").join(
                    k.name for k in registry.KINDS.values() if name in k.request_fields
                )
                errors[name] = _("Only a %(takers)s takes %(name)s.") % {
                    "takers": takers,
                    "name": repr(name),
                }
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


class AnalysisSerializer(JobSerializer):
    survey = serializers.IntegerField(source="survey_id", read_only=True)
    kind = serializers.CharField(read_only=True)
    spec = serializers.JSONField(read_only=True)


class ReportSerializer(JobSerializer):
    survey = serializers.IntegerField(source="survey_id", read_only=True)
    result = None  # type: ignore[assignment]  # the report itself is downloaded, see ``downloads``
    downloads = serializers.SerializerMethodField()

    def get_downloads(self, report: Any) -> dict[str, str]:
        if report.status != "succeeded":
            return {}
        base = f"/api/v1/reports/{report.pk}/download/?format="
        return {fmt: base + fmt for fmt in ("html", "csv", "json")}
