"""Conditions as analysts write them: the operators, typed conditions, and their check
against a survey's questions (no answer is read).

:func:`parse_where` turns api.md's conditions into the engine's
(:class:`reconstruction.algorithms.queries.Condition`), refusing with
:class:`AnalysisInputError` (HTTP 400) what makes no sense for the questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from core.errors import InvalidInput
from core.messages import message_of, translate
from privacy.mechanisms.messages import Message
from reconstruction.algorithms.queries import Condition
from surveys import selectors
from surveys.models import Question, Survey


@dataclass(frozen=True)
class Operator:
    """A condition operator: whether it applies to discrete questions (``in``, a list of
    categories) or continuous ones (thresholds), its symbol on forms and in labels."""

    name: str
    discrete: bool
    symbol: str
    text: str


OPERATORS: dict[str, Operator] = {
    op.name: op
    for op in (
        Operator("in", True, "in", "in"),
        Operator("gt", False, ">", ">"),
        Operator("lte", False, "≤", "<="),
        Operator("between", False, "between [a, b)", "between"),
    )
}
"""The one list of condition operators: the serializer's choices, the admin form's,
condition labels and :func:`parse_where` read it."""
DISCRETE_OPS = tuple(name for name, op in OPERATORS.items() if op.discrete)
CONTINUOUS_OPS = tuple(name for name, op in OPERATORS.items() if not op.discrete)


@dataclass(frozen=True)
class ConditionSpec:
    """One condition as the analyst wrote it (``attribute``, ``op``, ``value``), typed:
    categories as a tuple of labels, thresholds as numbers, ``between`` as a pair."""

    attribute: str
    op: str
    value: Any

    @classmethod
    def of(cls, item: Mapping[str, Any]) -> ConditionSpec:
        value = item.get("value")
        if isinstance(value, list):
            value = tuple(value)
        return cls(str(item["attribute"]), str(item["op"]), value)

    def as_json(self) -> dict[str, Any]:
        """The condition as the request sent it (api.md's JSON)."""
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"attribute": self.attribute, "op": self.op, "value": value}

    def label(self) -> str:
        """``sex in [F]``, ``age between [16, 30)``: the condition as users wrote it."""
        op, value = self.op, self.value
        if op == "in" and isinstance(value, tuple):
            return f"{self.attribute} in [{', '.join(str(v) for v in value)}]"
        if op == "between" and isinstance(value, tuple) and len(value) == 2:
            return f"{self.attribute} between [{value[0]:g}, {value[1]:g})"
        symbol = OPERATORS[op].text if op in OPERATORS else op
        return f"{self.attribute} {symbol} {value}"


class AnalysisInputError(InvalidInput, ValueError):
    """A request that cannot be analysed; ``errors`` names the offending fields.

    A domain error (HTTP 400 through ``config.errors``); in a worker it is a
    ``ValueError`` and fails the job with the same message.
    """

    def __init__(self, errors: Mapping[str, Message | str]) -> None:
        # A problem is a translatable Message (template + parameters), so a worker that
        # meets it stores the template and the reader sees it in their own language;
        # ``errors`` and ``detail`` are in the active language (the request's).
        field, problem = next(iter(errors.items()))
        self.message: Message | str = (
            Message(_FIELD_PROBLEM, {"field": field, "problem": problem})
            if isinstance(problem, Message)
            else f"{field}: {problem}"
        )
        shown = {key: translate(value) for key, value in errors.items()}
        detail = _("Invalid input: %(problem)s") % {"problem": translate(self.message)}
        super().__init__(detail, shown)

    def __str__(self) -> str:
        return translate(self.message)


_FIELD_PROBLEM = gettext_noop("%(field)s: %(problem)s")


@dataclass(frozen=True)
class Thresholds:
    """A consultation's disclosure thresholds (002: question-level 10, option-level 5)."""

    min_responses: int
    min_cell: int

    @classmethod
    def of(cls, survey: Survey) -> Thresholds:
        consultation = survey.consultation
        return cls(min_responses=consultation.min_responses, min_cell=consultation.min_cell)


# --------------------------------------------------------------------------- checks


def attribute_questions(survey: Survey, keys: Sequence[str], field: str) -> dict[str, Question]:
    """The questions the attributes name (the survey's own, else the profile survey's)."""
    found: dict[str, Question] = {}
    for key in keys:
        if key in found:
            continue
        try:
            found[key] = selectors.attribute_question(survey, key)
        except ValueError as exc:
            raise AnalysisInputError({field: message_of(exc)}) from None
    return found


def _label_codes(question: Question, values: Any, field: str) -> frozenset[int]:
    labels = [str(label) for label in question.categories]
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)):
        raise AnalysisInputError(
            {
                field: Message(
                    gettext_noop("'in' needs a list of categories of %(key)s"),
                    {"key": repr(question.key)},
                )
            }
        )
    if not values:
        raise AnalysisInputError(
            {field: Message(gettext_noop("'in' needs at least one category (empty condition)"))}
        )
    codes = set()
    for value in values:
        if str(value) not in labels:
            raise AnalysisInputError(
                {
                    field: Message(
                        gettext_noop("%(value)s is not a category of %(key)s (%(categories)s)"),
                        {
                            "value": repr(value),
                            "key": repr(question.key),
                            "categories": ", ".join(labels),
                        },
                    )
                }
            )
        codes.add(labels.index(str(value)))
    return frozenset(codes)


def parse_where(
    where: Sequence[ConditionSpec], questions: Mapping[str, Question], field: str = "where"
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
        question = questions[item.attribute]
        op = item.op
        if question.is_discrete and op not in DISCRETE_OPS:
            raise AnalysisInputError(
                {
                    item_field: Message(
                        gettext_noop("%(key)s is %(type)s: use op 'in', not %(op)s"),
                        {"key": repr(question.key), "type": question.type, "op": repr(op)},
                    )
                }
            )
        if not question.is_discrete and op not in CONTINUOUS_OPS:
            raise AnalysisInputError(
                {
                    item_field: Message(
                        gettext_noop("%(key)s is continuous: use gt, lte or between, not %(op)s"),
                        {"key": repr(question.key), "op": repr(op)},
                    )
                }
            )
        value = item.value
        if op == "in":
            value = _label_codes(question, value, item_field)
        try:
            conditions.append(Condition(item.attribute, op, value))
        except ValueError as exc:
            raise AnalysisInputError({item_field: message_of(exc)}) from None
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
                    {
                        field: Message(
                            gettext_noop(
                                "contradictory condition: no category of %(key)s meets all of it"
                            ),
                            {"key": repr(key)},
                        )
                    }
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
                    field: Message(
                        gettext_noop(
                            "contradictory condition: no value of %(key)s in its range "
                            "[%(low)s, %(high)s] meets all of it"
                        ),
                        {
                            "key": repr(key),
                            "low": f"{question.range_low:g}",
                            "high": f"{question.range_high:g}",
                        },
                    )
                }
            )
