"""Submitted answers: each survey's answer rules, and the check of one response.

A response is checked against rules computed once per survey from its questions
(:func:`answer_form`): a discrete answer must be one of the categories, a continuous
one a finite number the mechanism could have produced from the question's range and,
for a question created under the reporting grid, a grid value (the grid value itself is
what is stored, so no client's last bits reach the database).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from privacy.mechanisms.grid import SNAP
from surveys.schemes import DISCRETE_TYPES, PARTICIPANT_PATTERN, is_number, question_noise


@dataclass(frozen=True)
class AnswerRule:
    """How to check and store one question's answer, computed once per survey."""

    question_id: int
    key: str
    required: bool
    n_categories: int  # 0 for continuous
    codes: dict[str, int] | None  # label -> code for discrete questions
    low: float = 0.0  # bounds of a value the mechanism could have produced
    high: float = 0.0
    # The reporting grid (origin, resolution) of a question created under it: a report
    # must be a grid value; the grid value itself is stored.
    grid: tuple[float, float] | None = None

    def describe_range(self) -> str:
        return f"[{self.low:g}, {self.high:g}]"


@dataclass(frozen=True)
class AnswerForm:
    """A survey's answer rules by key, in question order."""

    rules: tuple[AnswerRule, ...]
    by_key: dict[str, AnswerRule]
    required_keys: frozenset[str]


def answer_form(questions: Iterable[Any]) -> AnswerForm:
    rules = []
    for q in questions:
        if q.type in DISCRETE_TYPES:
            rules.append(
                AnswerRule(
                    question_id=q.id,
                    key=q.key,
                    required=q.required,
                    n_categories=q.n_categories,
                    codes={label: code for code, label in enumerate(q.categories)},
                )
            )
        else:
            model = question_noise(q)
            low, high = model.reported_bounds(q.range_low, q.range_high)
            on_grid = getattr(q, "resolution", None) is not None and q.mechanism != "none"
            rules.append(
                AnswerRule(
                    question_id=q.id,
                    key=q.key,
                    required=q.required,
                    n_categories=0,
                    codes=None,
                    low=float(low),
                    high=float(high),
                    grid=(float(q.range_low), float(q.resolution)) if on_grid else None,
                )
            )
    return AnswerForm(
        rules=tuple(rules),
        by_key={r.key: r for r in rules},
        required_keys=frozenset(r.key for r in rules if r.required),
    )


def grid_value(answer: float, grid: tuple[float, float]) -> float | None:
    """The grid value ``origin + k * resolution`` (as a double, the same in every client)
    that ``answer`` is, or ``None`` when it is off the grid. A decimal within 10^-6 of a
    step of the grid value (written by hand, one last bit apart) counts as it; the grid
    value is what is stored, so no client's last bits reach the database."""
    origin, resolution = grid
    k = round((answer - origin) / resolution)
    value = origin + k * resolution
    if abs(answer - value) <= SNAP * resolution:
        return float(value)
    return None


# A row to store: (question_id, code, value, n_categories).
AnswerRow = tuple[int, int | None, float | None, int]
_RESPONSE_FIELDS = frozenset({"participant", "answers"})


def check_response(
    item: Any, form: AnswerForm
) -> tuple[str | None, list[AnswerRow], dict[str, Any]]:
    """Validate one submitted response against a survey's answer rules.

    Returns ``(participant, rows, errors)``; ``errors`` is empty when the response is
    good and otherwise names each offending field and answer key.
    """
    errors: dict[str, Any] = {}
    if not isinstance(item, dict):
        return None, [], {"non_field_errors": [_("A response must be a JSON object.")]}
    if not _RESPONSE_FIELDS.issuperset(item):
        for name in item:
            if name not in _RESPONSE_FIELDS:
                errors[str(name)] = [
                    _('Unknown field; a response has "participant" and "answers".')
                ]
    participant = item.get("participant")
    if not isinstance(participant, str) or not PARTICIPANT_PATTERN.fullmatch(participant):
        errors["participant"] = [_("Must be 1-64 characters of A-Z, a-z, 0-9, _ and -.")]
        participant = None
    answers = item.get("answers")
    rows: list[AnswerRow] = []
    if not isinstance(answers, dict):
        errors["answers"] = [_("Must be an object mapping question keys to answers.")]
        return participant, rows, errors
    answer_errors: dict[str, list[str]] = {}
    by_key = form.by_key
    for key, answer in answers.items():
        rule = by_key.get(key)
        if rule is None:
            answer_errors[str(key)] = [_("Unknown question key.")]
            continue
        codes = rule.codes
        kind = type(answer)
        # The common cases first (a known label; a float or int in range, which also rules
        # out NaN and the infinities); anything else takes the full checks below.
        if codes is not None:
            if kind is str:
                code = codes.get(answer)
                if code is not None:
                    rows.append((rule.question_id, code, None, rule.n_categories))
                    continue
        elif (kind is float or kind is int) and rule.low <= answer <= rule.high:
            if rule.grid is None:
                rows.append((rule.question_id, None, float(answer), 0))
                continue
            value = grid_value(answer, rule.grid)
            if value is not None:
                rows.append((rule.question_id, None, value, 0))
                continue
        if answer is None:
            if rule.required:
                answer_errors[key] = [_("This answer is required.")]
            continue
        if codes is not None:
            code = codes.get(answer) if isinstance(answer, str) else None
            if code is None:
                answer_errors[key] = [
                    _("Must be one of the categories %(categories)s, got %(value)s.")
                    % {"categories": list(codes), "value": repr(answer)}
                ]
            else:
                rows.append((rule.question_id, code, None, rule.n_categories))
        else:
            if not is_number(answer) or not math.isfinite(answer):
                answer_errors[key] = [
                    _("Must be a finite number, got %(value)s.") % {"value": repr(answer)}
                ]
            elif not rule.low <= answer <= rule.high:
                answer_errors[key] = [
                    _(
                        "%(value)s could not have been produced by the mechanism from the "
                        "question's range: reported values lie in %(range)s."
                    )
                    % {"value": repr(answer), "range": rule.describe_range()}
                ]
            elif rule.grid is not None and grid_value(answer, rule.grid) is None:
                answer_errors[key] = [
                    _(
                        "%(value)s is not on the question's reporting grid %(origin)s + k * "
                        "%(resolution)s: send what the client library computes (noise drawn "
                        "on the grid)."
                    )
                    % {
                        "value": repr(answer),
                        "origin": f"{rule.grid[0]!r}",
                        "resolution": f"{rule.grid[1]!r}",
                    }
                ]
            else:
                value = float(answer) if rule.grid is None else grid_value(answer, rule.grid)
                rows.append((rule.question_id, None, value, 0))
    if len(answers) < len(form.required_keys) or not form.required_keys.issubset(answers):
        for key in form.required_keys:
            if key not in answers:
                answer_errors[key] = [_("This answer is required.")]
    if answer_errors:
        errors["answers"] = answer_errors
    return participant, rows, errors
