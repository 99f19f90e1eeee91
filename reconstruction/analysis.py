"""Analyses of distorted survey data: from an analyst's request to a publishable result.

This module joins the domain (questions, answers, thresholds) to the pure
engine (``reconstruction.algorithms``): it turns api.md's JSON conditions
into engine conditions, loads the answers as numpy arrays through the
selectors, runs the estimator and applies disclosure control
(002_f0fd5869fe299975.txt) before anything leaves the worker.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reconstruction.algorithms import queries
from reconstruction.algorithms.continuous import IntervalReconstruction
from reconstruction.algorithms.methods import DISCRETE_METHODS, reconstruct
from reconstruction.algorithms.queries import (
    Attribute,
    Condition,
    ContinuousAttribute,
    DiscreteAttribute,
)
from reconstruction.algorithms.result import Reconstruction
from surveys import selectors
from surveys.models import Question, Survey

COUNT_METHODS = ("joint", "figure3", "naive")
MEAN_METHODS = ("unbiased", "figure3", "naive")
CONTINUOUS_METHODS = ("em", "as")
SAMPLE_METHODS = ("figure3", "posterior")
DISCRETE_OPS = ("in",)
CONTINUOUS_OPS = ("gt", "lte", "between")


class AnalysisInputError(ValueError):
    """A request that cannot be analysed; ``errors`` names the offending fields."""

    def __init__(self, errors: Mapping[str, Any]) -> None:
        self.errors = dict(errors)
        field, problem = next(iter(self.errors.items()))
        super().__init__(f"{field}: {problem}")


@dataclass(frozen=True)
class Thresholds:
    """A consultation's disclosure thresholds (002: question-level 10, option-level 5)."""

    min_responses: int
    min_cell: int

    @classmethod
    def of(cls, survey: Survey) -> Thresholds:
        consultation = survey.consultation
        return cls(min_responses=consultation.min_responses, min_cell=consultation.min_cell)


# --------------------------------------------------------------------------- requests


def attribute_questions(survey: Survey, keys: Sequence[str], field: str) -> dict[str, Question]:
    """The questions the attributes name (the survey's own, else the profile survey's)."""
    found: dict[str, Question] = {}
    for key in keys:
        if key in found:
            continue
        try:
            found[key] = selectors.attribute_question(survey, key)
        except ValueError as exc:
            raise AnalysisInputError({field: str(exc)}) from None
    return found


def _label_codes(question: Question, values: Any, field: str) -> frozenset[int]:
    labels = [str(label) for label in question.categories]
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise AnalysisInputError({field: f"'in' needs a list of categories of {question.key!r}"})
    if not values:
        raise AnalysisInputError({field: "'in' needs at least one category (empty condition)"})
    codes = set()
    for value in values:
        if str(value) not in labels:
            raise AnalysisInputError(
                {field: f"{value!r} is not a category of {question.key!r} ({', '.join(labels)})"}
            )
        codes.add(labels.index(str(value)))
    return frozenset(codes)


def parse_where(
    where: Sequence[Mapping[str, Any]], questions: Mapping[str, Question], field: str = "where"
) -> list[Condition]:
    """Turn api.md conditions into engine conditions, rejecting what makes no sense.

    Checked here, so no job is created for them: an operator that does not fit the
    attribute's type, an unknown category, non-numeric thresholds, and a
    contradictory conjunction (no value can satisfy it, e.g. ``gt 40`` and
    ``lte 30``, ``between [5, 3)``, ``in [F]`` and ``in [M]``, or a range outside
    the question's declared range).
    """
    conditions: list[Condition] = []
    for index, item in enumerate(where):
        item_field = f"{field}[{index}]"
        question = questions[item["attribute"]]
        op = item["op"]
        if question.is_discrete and op not in DISCRETE_OPS:
            raise AnalysisInputError(
                {item_field: f"{question.key!r} is {question.type}: use op 'in', not {op!r}"}
            )
        if not question.is_discrete and op not in CONTINUOUS_OPS:
            raise AnalysisInputError(
                {item_field: f"{question.key!r} is continuous: use gt, lte or between, not {op!r}"}
            )
        value = item.get("value")
        if op == "in":
            value = _label_codes(question, value, item_field)
        try:
            conditions.append(Condition(question.key, op, value))
        except ValueError as exc:
            raise AnalysisInputError({item_field: str(exc)}) from None
    _check_satisfiable(conditions, questions, field)
    return conditions


def _check_satisfiable(
    conditions: Sequence[Condition], questions: Mapping[str, Question], field: str
) -> None:
    by_attribute: dict[str, list[Condition]] = {}
    for condition in conditions:
        by_attribute.setdefault(condition.attribute, []).append(condition)
    for key, group in by_attribute.items():
        question = questions[key]
        if question.is_discrete:
            allowed = frozenset(range(len(question.categories)))
            for condition in group:
                allowed &= condition.value  # type: ignore[operator]
            if not allowed:
                raise AnalysisInputError(
                    {field: f"contradictory condition: no category of {key!r} meets all of it"}
                )
            continue
        # Intersect the half-open pieces with the declared range [low, high].
        low, low_open = float(question.range_low), False
        high, high_open = float(question.range_high), False
        for condition in group:
            if condition.op == "gt":
                t = float(condition.value)  # type: ignore[arg-type]
                if t >= low:
                    low, low_open = t, True
            elif condition.op == "lte":
                t = float(condition.value)  # type: ignore[arg-type]
                if t < high or (t == high and high_open):
                    high, high_open = t, False
            else:
                t1, t2 = condition.value  # type: ignore[misc]
                if t1 > low or (t1 == low and not low_open):
                    low, low_open = t1, False
                if t2 <= high:
                    high, high_open = t2, True
        if low > high or (low == high and (low_open or high_open)):
            raise AnalysisInputError(
                {
                    field: f"contradictory condition: no value of {key!r} in its range "
                    f"[{question.range_low:g}, {question.range_high:g}] meets all of it"
                }
            )


def condition_keys(spec: Mapping[str, Any]) -> list[str]:
    keys = [item["attribute"] for item in spec.get("where", [])]
    for stratum in spec.get("strata", []):
        keys += [item["attribute"] for item in stratum["where"]]
    return keys


@dataclass(frozen=True)
class PreparedAnalysis:
    """A request resolved against the survey: questions, conditions, loaded table."""

    survey: Survey
    spec: Mapping[str, Any]
    questions: dict[str, Question]
    where: list[Condition]
    strata: list[tuple[list[Condition], int]]
    participants: np.ndarray[Any, Any]
    table: dict[str, Attribute]
    thresholds: Thresholds


def _attribute(question: Question, column: np.ndarray[Any, Any]) -> Attribute:
    if question.is_discrete:
        return DiscreteAttribute(column.astype(np.intp), selectors.question_channel(question))
    return ContinuousAttribute(
        column.astype(np.float64),
        selectors.question_noise(question),
        float(question.range_low),
        float(question.range_high),
    )


def prepare(survey: Survey, spec: Mapping[str, Any]) -> PreparedAnalysis:
    """Resolve and validate a request, then load the answers it needs.

    Raises :class:`AnalysisInputError` for anything the analyst must fix.
    """
    kind = spec["kind"]
    attribute = spec.get("attribute")
    keys = condition_keys(spec)
    if attribute:
        keys = [attribute, *keys]
    questions = attribute_questions(survey, keys, "where")
    if attribute:
        question = questions[attribute]
        if kind == "mean" and question.is_discrete:
            raise AnalysisInputError(
                {
                    "attribute": f"{attribute!r} is {question.type}: a mean needs a continuous "
                    "question (use a distribution)"
                }
            )
    method = spec.get("method")
    _check_method(
        kind,
        questions.get(attribute) if attribute else None,
        method,
        grouped=bool(spec.get("where")),
    )
    where = parse_where(spec.get("where", []), questions)
    if kind == "count" and not where:
        raise AnalysisInputError({"where": "a count needs at least one condition"})
    strata = [
        (parse_where(stratum["where"], questions, f"strata[{i}].where"), int(stratum["size"]))
        for i, stratum in enumerate(spec.get("strata", []))
    ]
    loaded = selectors.attribute_table(survey, list(dict.fromkeys(keys)))
    table = {key: _attribute(questions[key], loaded.columns[key]) for key in loaded.columns}
    return PreparedAnalysis(
        survey=survey,
        spec=spec,
        questions=questions,
        where=where,
        strata=strata,
        participants=loaded.participants,
        table=table,
        thresholds=Thresholds.of(survey),
    )


def _check_method(
    kind: str, question: Question | None, method: str | None, *, grouped: bool = False
) -> None:
    if method is None:
        return
    if kind == "distribution" and grouped:
        # Within a group the joint EM is the only estimator; a chosen method would be
        # silently ignored.
        raise AnalysisInputError(
            {
                "method": f"{method!r} applies only to a distribution without conditions; "
                "within a group the joint EM is used (leave out 'method')"
            }
        )
    if kind == "count":
        allowed: Sequence[str] = COUNT_METHODS
    elif kind == "mean":
        allowed = MEAN_METHODS
    elif kind == "sample":
        allowed = SAMPLE_METHODS
    elif question is not None and question.is_discrete:
        allowed = DISCRETE_METHODS
    else:
        allowed = CONTINUOUS_METHODS
    if method not in allowed:
        raise AnalysisInputError(
            {
                "method": f"{method!r} does not apply to this {kind}; choose one of "
                f"{', '.join(allowed)}"
            }
        )
    if kind == "distribution" and question is not None and question.is_discrete:
        # Some estimators fit only some channels (nstops: the uniform negative survey).
        # The engine's own check, on the channel alone (placeholder counts, no interval),
        # so no job is created only to fail on it.
        channel = selectors.question_channel(question)
        try:
            reconstruct(np.ones(channel.shape[0]), channel, method=method, ci=False)
        except ValueError as exc:
            raise AnalysisInputError(
                {"method": f"{exc} ({question.key!r} uses {question.mechanism})"}
            ) from None


def precheck(prepared: PreparedAnalysis) -> None:
    """Refuse, before a job exists, what could never be published or drawn.

    - fewer responses than the question-level threshold;
    - a condition whose estimated group is below the option-level threshold
      (count, sample) or the question-level threshold (mean, distribution);
    - a sample larger than its estimated pool.
    """
    spec, thresholds = prepared.spec, prepared.thresholds
    n = len(prepared.participants)
    if n < thresholds.min_responses:
        keys = ", ".join(repr(key) for key in prepared.questions) or "this survey"
        raise AnalysisInputError(
            {
                "survey": f"only {n} participants answered {keys}; at least "
                f"{thresholds.min_responses} are needed before anything is published"
            }
        )
    if not prepared.where:
        group = float(n)
    else:
        group = queries.count(prepared.table, prepared.where, ci=False).estimate
    kind = spec["kind"]
    needed = thresholds.min_cell if kind in ("count", "sample") else thresholds.min_responses
    if prepared.where and group < needed:
        raise AnalysisInputError(
            {
                "where": f"the group this condition selects is too small to publish (fewer than "
                f"{needed} estimated participants)"
            }
        )
    if kind == "sample":
        size = int(spec["size"])
        if size > group:
            raise AnalysisInputError(
                {
                    "size": f"a sample of {size} is larger than the estimated pool of "
                    f"{group:.0f} participants meeting the condition"
                }
            )
        for i, (stratum, quota) in enumerate(prepared.strata):
            pool = queries.count(prepared.table, [*prepared.where, *stratum], ci=False).estimate
            if quota > pool:
                raise AnalysisInputError(
                    {
                        f"strata[{i}].size": f"a quota of {quota} is larger than the stratum's "
                        f"estimated pool of {pool:.0f}"
                    }
                )


# --------------------------------------------------------------------------- results


def _finite(value: float) -> float | None:
    return float(value) if math.isfinite(value) else None


def _interval(pair: Any) -> list[float | None]:
    return [_finite(float(pair[0])), _finite(float(pair[1]))]


def suppress_cells(
    counts: np.ndarray[Any, Any], min_cell: int
) -> np.ndarray[Any, np.dtype[np.bool_]]:
    """Which cells of a distribution to hide.

    Primary suppression hides cells estimated below ``min_cell`` (002's
    option-level threshold). The total is published (the response count), so a
    single hidden cell could be derived by subtraction, the leak 002 describes
    for non-responses; the next-smallest cell is then hidden too
    (complementary suppression), so only the hidden cells' sum is derivable.
    """
    hidden = counts < min_cell
    if hidden.sum() == 1 and counts.size > 1:
        order = np.argsort(np.where(hidden, np.inf, counts), kind="stable")
        hidden[order[0]] = True
    return hidden


def distribution_payload(
    result: Reconstruction | IntervalReconstruction,
    question: Question,
    min_cell: int,
) -> dict[str, Any]:
    counts = np.asarray(result.counts, dtype=np.float64)
    hidden = suppress_cells(counts, min_cell)
    rec = result.reconstruction if isinstance(result, IntervalReconstruction) else result
    payload: dict[str, Any] = {}
    if isinstance(result, IntervalReconstruction):
        payload["intervals"] = [[float(a), float(b)] for a, b in result.intervals]
    else:
        payload["categories"] = [str(label) for label in question.categories]
    total = float(counts.sum())
    payload.update(
        counts=[None if h else float(c) for c, h in zip(counts, hidden, strict=True)],
        proportions=[
            None if h else (float(c) / total if total else None)
            for c, h in zip(counts, hidden, strict=True)
        ],
        ci95=[None if h else _interval(pair) for pair, h in zip(rec.ci95, hidden, strict=True)],
        suppressed=[bool(h) for h in hidden],
        method=rec.method,
        iterations=int(rec.iterations),
        converged=bool(rec.converged),
        notes=list(rec.notes),
        n=total,
    )
    if hidden.any():
        payload["suppression"] = (
            f"cells estimated below {min_cell} are shown as null (with the next-smallest "
            "cell when only one was, so it cannot be derived from the total)"
        )
    return payload


def calibration_of(question: Question) -> np.ndarray[Any, Any] | None:
    """The calibration pairs a manual negative question's channel was estimated from."""
    if question.mechanism != "negative_manual":
        return None
    return selectors.calibration_pairs(question)


def overall_distribution(
    question: Question, method: str | None, *, table: Mapping[str, Attribute] | None = None
) -> Reconstruction | IntervalReconstruction:
    """A question's reconstructed distribution over all its live answers.

    Discrete questions need only the reported counts (one SQL ``GROUP BY``);
    continuous ones their values.
    """
    if question.is_discrete:
        counts = selectors.reported_code_counts(question)
        return reconstruct(
            counts,
            selectors.question_channel(question),
            method=method or "em_as",
            calibration_pairs=calibration_of(question),
        )
    attribute = (table or {}).get(question.key)
    if attribute is None:
        attribute = ContinuousAttribute(
            selectors.question_values(question),
            selectors.question_noise(question),
            float(question.range_low),
            float(question.range_high),
        )
    return queries.distribution({question.key: attribute}, question.key, method=method or "em")


Progress = Callable[[float], None]


def run(prepared: PreparedAnalysis, progress: Progress) -> dict[str, Any]:
    """Compute the analysis and apply disclosure control; the JSON of api.md."""
    spec, table, where = prepared.spec, prepared.table, prepared.where
    thresholds = prepared.thresholds
    kind = spec["kind"]
    method = spec.get("method")
    progress(0.2)
    if kind == "count":
        result = queries.count(table, where, method=method or "joint")
        progress(0.9)
        suppressed = result.estimate < thresholds.min_cell
        payload: dict[str, Any] = {
            "estimate": None if suppressed else float(result.estimate),
            "ci95": None if suppressed else _interval(result.ci95),
            "population": int(result.population),
            "suppressed": bool(suppressed),
            "method": result.method,
            "notes": list(result.notes),
        }
        if suppressed:
            payload["reason"] = f"the estimate is below the threshold of {thresholds.min_cell}"
        return payload
    if kind == "mean":
        result_mean = queries.mean(table, spec["attribute"], where, method=method or "unbiased")
        progress(0.9)
        small = result_mean.group_size < thresholds.min_responses
        payload = {
            "estimate": None if small else float(result_mean.estimate),
            "ci95": None if small else _interval(result_mean.ci95),
            "group_size": float(result_mean.group_size),
            "suppressed": bool(small),
            "method": result_mean.method,
            "notes": list(result_mean.notes),
        }
        if small:
            payload["reason"] = (
                f"the group is estimated below the threshold of {thresholds.min_responses}"
            )
        return payload
    if kind == "distribution":
        question = prepared.questions[spec["attribute"]]
        if where:
            reconstructed = queries.distribution(table, spec["attribute"], where)
        else:
            reconstructed = overall_distribution(question, method, table=table)
        progress(0.9)
        return distribution_payload(reconstructed, question, thresholds.min_cell)
    # sample
    seed = spec.get("seed")
    drawn = queries.sample(
        table,
        int(spec["size"]),
        where,
        strata=prepared.strata,
        method=method or "figure3",
        rng=np.random.default_rng(seed),
    )
    progress(0.9)
    return {
        "participants": [str(ref) for ref in prepared.participants[drawn.rows]],
        "strata": [[str(ref) for ref in prepared.participants[rows]] for rows in drawn.strata_rows]
        if prepared.strata
        else [],
        "pool_estimate": float(drawn.pool_estimate),
        "expected_precision": float(drawn.expected_precision),
        "seed": seed,
        "method": drawn.method,
    }
