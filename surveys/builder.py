"""The survey builder's preview: what each question's mechanism does, in plain words.

Read by the admin (surveys/admin.py) for the survey being built; the maths is in
:mod:`surveys.preview`.
"""

from __future__ import annotations

import math
from typing import Any

from django.conf import settings
from django.utils.translation import gettext as _

from core.i18n import number
from core.messages import translate
from privacy.mechanisms.descriptors import CONTINUOUS, DISCRETE, report_sentence
from surveys import schemes, selectors
from surveys.models import Question, Survey
from surveys.preview import preview


def _as_api(question: Question) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "key": question.key,
        "text": question.text,
        "type": question.type,
        "mechanism": {"name": question.mechanism, **(question.mechanism_params or {})},
    }
    if question.is_discrete:
        raw["categories"] = list(question.categories)
    else:
        raw["range"] = [question.range_low, question.range_high]
    return raw


def epsilon_words(eps: float | None, mechanism: str, discrete: bool) -> str:
    if mechanism == "none":
        return _("No distortion: the answer is sent as given (no privacy protection).")
    if not discrete and eps is None:  # additive_staircase covering its range has an eps
        return _("Noise is added to every number; a single reported number says little.")
    if eps is None:
        return _(
            "ε is unbounded: a reported answer can rule some true answers out, but it never "
            "says which of the others is true."
        )
    return _(
        "ε = %(epsilon)s: seeing a reported answer makes one true answer at most %(ratio)s "
        "times as likely as another (below 1 is strong, above 3 is weak)."
    ) % {"epsilon": number(eps, 2), "ratio": number(math.exp(eps))}


def margin_words(margin: float | None, discrete: bool, respondents: int) -> str:
    if margin is None:
        return _("The channel cannot be inverted: no estimate is possible.")
    if discrete:
        return _(
            "Expected margin of error at %(n)s respondents: ±%(points)s percentage points on "
            "each category's share."
        ) % {"n": number(respondents), "points": number(100 * margin, 1)}
    return _("Expected margin of error of the mean at %(n)s respondents: ±%(margin)s.") % {
        "n": number(respondents),
        "margin": number(margin),
    }


def device_sentence(raw_mechanism: dict[str, Any]) -> str:
    """What the resident's device does, in the report's words (the descriptor's sentence)."""
    try:
        found = report_sentence(raw_mechanism)
    except (KeyError, TypeError, ValueError):
        return ""
    if found is None:
        return ""
    template, params = found
    return _(template) % params if params else _(template)


def protection_sentence(name: str, discrete: bool, params: dict[str, Any], value_range: Any) -> str:
    """What protects the resident where ε does not say it (negative surveys, Laplace)."""
    mechanism = (DISCRETE if discrete else CONTINUOUS).get(name)
    if mechanism is None or not mechanism.protection:
        return ""
    try:
        return _(mechanism.protection) % mechanism.protection_params(params, value_range)
    except (KeyError, TypeError, ValueError):
        return ""


def mechanism_label(name: str, discrete: bool) -> str:
    mechanism = (DISCRETE if discrete else CONTINUOUS).get(name)
    return _(mechanism.label) if mechanism is not None else name


def question_preview(raw: dict[str, Any], respondents: int) -> dict[str, Any]:
    """The preview of one question in the API's JSON shape; ``error`` (the API's message)
    instead of the channel when the question is not valid."""
    key = str(raw.get("key") or "")
    try:
        spec = schemes.parse_question(raw)
        shown = preview(spec, respondents)
    except schemes.QuestionInvalid as exc:
        return {"key": key, "text": raw.get("text") or "", "error": problems_text(exc.errors)}
    except ValueError as exc:
        return {"key": key, "text": raw.get("text") or "", "error": translate(exc)}
    discrete = spec.type != "continuous"
    protection = protection_sentence(spec.mechanism, discrete, dict(spec.params), spec.range)
    return {
        "key": spec.key,
        "text": spec.text,
        "mechanism": mechanism_label(spec.mechanism, discrete),
        "sentence": device_sentence({"name": spec.mechanism, **spec.params}),
        "protection": protection,
        "categories": shown.categories,
        "rows": list(zip(shown.categories, shown.channel or [], strict=False)),
        # Where ε says nothing (negative surveys) or is not published (Laplace), the
        # protection sentence says what protects the resident instead.
        "epsilon": ""
        if protection and shown.epsilon is None
        else epsilon_words(shown.epsilon, spec.mechanism, discrete),
        "margin": margin_words(shown.margin, discrete, respondents),
    }


def problems_text(errors: Any) -> str:
    """``{"mechanism": ["..."]}`` as one line, ``mechanism: ...`` (as the API's ``detail``)."""
    if isinstance(errors, dict):
        return "; ".join(
            message if field == "non_field_errors" else f"{field}: {message}"
            for field, problems in errors.items()
            for message in [problems_text(problems)]
        )
    if isinstance(errors, (list, tuple)):
        return " ".join(problems_text(item) for item in errors if item)
    return str(errors)


def without_mechanism_name(message: str) -> str:
    """A services message without its leading mechanism name (``randomised_response: ...``):
    the card names the mechanism in its own words beside it."""
    name, colon, rest = message.partition(": ")
    return rest if colon and (name in DISCRETE or name in CONTINUOUS) else message


def _api_field_labels() -> dict[str, str]:
    """The API's question fields that are not one of the card's own fields, as the card
    names them."""
    return {
        "range": _("Range"),
        "translations": _("Translations"),
        "mechanism": _("Privacy mechanism"),
        "reuse": _("Ask again (same answer kept)"),
    }


def card_problems(problems: Any, fields: dict[str, Any]) -> str:
    """A card's problems as one line for its live preview, each after the card's label of
    its field (``fields``: the card form's fields), not the API's name; an own table's
    message names its row itself. The messages are those saving shows beside the fields."""
    if not isinstance(problems, dict):
        return without_mechanism_name(problems_text(problems))
    labels = _api_field_labels()
    parts = []
    for field, errors in problems.items():
        messages = errors if isinstance(errors, (list, tuple)) else [errors]
        text = " ".join(without_mechanism_name(problems_text(m)) for m in messages if m)
        if field in ("non_field_errors", "__all__") or field.endswith("__matrix"):
            parts.append(text)
            continue
        label = labels.get(field) or (fields[field].label if field in fields else field)
        parts.append(f"{label}: {text}")
    return "; ".join(parts)


def question_card(question: Question) -> dict[str, Any]:
    """A frozen question as the survey page shows it: readable, no JSON."""
    discrete = question.is_discrete
    params = dict(question.mechanism_params or {})
    languages = dict(settings.LANGUAGES)
    types = {
        "binary": _("Yes/no or two answers (binary)"),
        "nominal": _("Choice among answers (nominal)"),
        "ordinal": _("Ordered answers (ordinal)"),
        "continuous": _("A number (continuous)"),
    }
    mechanism = (DISCRETE if discrete else CONTINUOUS).get(question.mechanism)
    param_labels = dict(getattr(mechanism, "param_labels", None) or {})
    shown_params = ", ".join(
        _("own table of chances (the channel below)")
        if name == "matrix"
        # Each parameter by the card's label for it ("half_width" read as a raw name).
        else f"{_(param_labels[name]) if name in param_labels else name} = "
        f"{number(value) if isinstance(value, (int, float)) else '…'}"
        for name, value in params.items()
    )
    value_range = None
    if not discrete:
        value_range = _("%(low)s to %(high)s") % {
            "low": number(question.range_low or 0),
            "high": number(question.range_high or 0),
        }
        if question.step:
            value_range += " · " + _("step %(step)s") % {"step": number(question.step)}
    return {
        "key": question.key,
        "text": question.text,
        "type": types.get(question.type, question.type),
        "required": question.required,
        "categories": list(question.categories or []) if discrete else [],
        "range": value_range,
        "mechanism": mechanism_label(question.mechanism, discrete),
        "params": shown_params,
        "sentence": device_sentence({"name": question.mechanism, **params}),
        "translations": [
            {
                "language": languages.get(code, code),
                "text": entry.get("text", ""),
                "labels": entry.get("labels") or [],
            }
            for code, entry in (question.translations or {}).items()
            if isinstance(entry, dict)
        ],
    }


def mechanism_previews(survey: Survey, respondents: int) -> list[dict[str, Any]]:
    return [
        question_preview(_as_api(question), respondents)
        for question in selectors.survey_questions(survey)
    ]
