"""Questions and their mechanisms: validation, channels, noise models, answer lookups.

Framework-free apart from type hints: every mechanism is built and validated by
:mod:`privacy.mechanisms`, so the rules for parameters live in one place and the API,
the admin and the services all give the same messages.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.utils.translation import gettext as _
from numpy.typing import NDArray

from core.messages import translate
from privacy.mechanisms import (
    CONTINUOUS,
    DISCRETE,
    channel_conditioning,
    epsilon,
    noise_model,
)
from privacy.mechanisms.grid import (
    MAX_GRID_POINTS,
    MIN_RELATIVE_RESOLUTION,
    default_resolution,
    grid_noise,
)

DISCRETE_TYPES = ("binary", "nominal", "ordinal")
QUESTION_TYPES = (*DISCRETE_TYPES, "continuous")
# name -> allowed parameters, from the mechanisms' descriptors (privacy.mechanisms).
DISCRETE_MECHANISMS: dict[str, tuple[str, ...]] = {m.name: m.params for m in DISCRETE.values()}
CONTINUOUS_MECHANISMS: dict[str, tuple[str, ...]] = {m.name: m.params for m in CONTINUOUS.values()}
MAX_CATEGORIES = 100  # the database's limit; settings.SURVEY_MAX_CATEGORIES may lower it
MAX_QUESTIONS = 100  # default of settings.SURVEY_MAX_QUESTIONS
MAX_LABEL_LENGTH = 100
MAX_TEXT_LENGTH = 500
# Magnitude bounds (issue 13): a range end beyond RANGE_BOUND, or a noise parameter beyond
# NOISE_RANGE_FACTOR times the range's width, only overflows the engine's arithmetic.
RANGE_BOUND = 1e12
NOISE_RANGE_FACTOR = 1000.0
# Degenerate mechanisms (issue 27): noise below this share of the range's width, a
# negative survey's sigma below MIN_CATEGORY_SIGMA category steps and channel entries
# between 0 and MIN_CHANNEL_ENTRY only break the engine's arithmetic; a step finer than
# range / MAX_LATTICE_STEPS makes the lattice too large to fit.
MIN_NOISE_RANGE_FACTOR = 1e-6
MIN_CATEGORY_SIGMA = 0.01
MAX_LATTICE_STEPS = 100_000
# Always used with ``fullmatch`` (``$`` would also accept a trailing newline).
KEY_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
PARTICIPANT_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")
NEGATIVE_MANUAL_INSTRUCTION = "Choose one answer that is NOT true for you."


class QuestionInvalid(ValueError):
    """A question specification is wrong; ``errors`` maps field names to messages."""

    def __init__(self, errors: dict[str, list[str]]) -> None:
        super().__init__("; ".join(f"{k}: {' '.join(v)}" for k, v in errors.items()))
        self.errors = errors


def is_number(value: Any) -> bool:
    """A JSON number: int or float but not bool (``True`` is not 1 here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@dataclass(frozen=True)
class QuestionSpec:
    """A validated question, ready to be stored."""

    key: str
    text: str
    type: str
    required: bool
    categories: tuple[str, ...]
    range: tuple[float, float] | None
    mechanism: str
    params: dict[str, Any] = field(default_factory=dict)
    step: float | None = None
    translations: dict[str, Any] = field(default_factory=dict)
    # The reporting grid (issue 31): continuous questions with noise only.
    resolution: float | None = None
    # Issue 28: {"survey": S, "question": K}, an earlier question asked again (checked
    # against the stored one by surveys.privacy_budget.reuse_problems).
    reuse: dict[str, Any] | None = None

    @property
    def n_categories(self) -> int:
        return len(self.categories)


def _step(
    raw: Any,
    qtype: str | None,
    value_range: tuple[float, float] | None,
    errors: dict[str, list[str]],
) -> float | None:
    """The lattice ``step`` of a continuous question (issue 10), or ``None``."""
    if raw is None:
        return None
    if qtype != "continuous":
        errors["step"] = [_("Only a continuous question has a step.")]
        return None
    if not is_number(raw) or not math.isfinite(raw) or not raw > 0:
        errors["step"] = [_("Must be a positive number, got %(value)s.") % {"value": repr(raw)}]
        return None
    if value_range is not None:
        count = (value_range[1] - value_range[0]) / raw
        if abs(count - round(count)) > 1e-6 * max(1.0, count):
            errors["step"] = [
                _(
                    "The range [%(low)s, %(high)s] must be a whole number of steps of "
                    "%(step)s: the true values are low, low + step, ..., high."
                )
                % {"low": f"{value_range[0]:g}", "high": f"{value_range[1]:g}", "step": f"{raw:g}"}
            ]
            return None
        if count > MAX_LATTICE_STEPS * (1 + 1e-9):
            errors["step"] = [
                _(
                    "Too small for the range: at most %(limit)s steps across [%(low)s, "
                    "%(high)s], got %(count)s."
                )
                % {
                    "limit": f"{MAX_LATTICE_STEPS:,}",
                    "low": f"{value_range[0]:g}",
                    "high": f"{value_range[1]:g}",
                    "count": f"{count:.3g}",
                }
            ]
            return None
    return float(raw)


def _resolution(
    raw: Any,
    qtype: str | None,
    value_range: tuple[float, float] | None,
    step: float | None,
    mechanism: str,
    errors: dict[str, list[str]],
) -> float | None:
    """The reporting grid's resolution of a continuous question with noise (issue 31):
    as given, else ``step``, else the range's width / 10^4."""
    noisy = qtype == "continuous" and mechanism in CONTINUOUS and mechanism != "none"
    if raw is not None and not noisy:
        if qtype is not None and mechanism:
            errors["resolution"] = [_("Only a continuous question with noise has a resolution.")]
        return None
    if not noisy or value_range is None or errors:
        return None
    if raw is None:
        return default_resolution(value_range[0], value_range[1], step)
    if not is_number(raw) or not math.isfinite(raw) or not raw > 0:
        errors["resolution"] = [
            _("Must be a positive number, got %(value)s.") % {"value": repr(raw)}
        ]
        return None
    low, high = value_range
    values = {"low": f"{low:g}", "high": f"{high:g}", "resolution": f"{raw:g}"}
    count = (high - low) / raw
    if abs(count - round(count)) > 1e-6 * max(1.0, count):
        errors["resolution"] = [
            _(
                "The range [%(low)s, %(high)s] must be a whole number of steps of "
                "%(resolution)s: the grid is low, low + resolution, ..., high."
            )
            % values
        ]
    elif count > MAX_GRID_POINTS * (1 + 1e-9):
        errors["resolution"] = [
            _(
                "Too small for the range: at most %(limit)s grid steps across [%(low)s, "
                "%(high)s], got %(count)s."
            )
            % {**values, "limit": f"{MAX_GRID_POINTS:,}", "count": f"{count:.3g}"}
        ]
    elif step is not None and abs(step / raw - round(step / raw)) > 1e-6 * max(1.0, step / raw):
        errors["resolution"] = [
            _("The step %(step)s must be a whole number of resolutions of %(resolution)s.")
            % {**values, "step": f"{step:g}"}
        ]
    if "resolution" in errors:
        return None
    return float(raw)


def _grid_error(value_range: tuple[float, float], resolution: float) -> str | None:
    """Grid values must be distinct doubles across the range (and its noise)."""
    largest = max(abs(value_range[0]), abs(value_range[1]))
    limit = MIN_RELATIVE_RESOLUTION * largest
    if resolution < limit:
        return _(
            "The reporting grid's resolution %(resolution)s is too fine for values as large "
            "as %(largest)s; give a resolution of at least %(limit)s."
        ) % {"resolution": f"{resolution:g}", "largest": f"{largest:g}", "limit": f"{limit:.3g}"}
    return None


def parse_question(raw: Any, *, max_categories: int = MAX_CATEGORIES) -> QuestionSpec:
    """Validate one question as the API receives it and return its spec.

    Raises
    ------
    QuestionInvalid
        With messages keyed by the offending field (``key``, ``type``, ``categories``,
        ``range``, ``mechanism``, ...).
    """
    if not isinstance(raw, Mapping):
        raise QuestionInvalid({"non_field_errors": [_("A question must be a JSON object.")]})
    errors: dict[str, list[str]] = {}
    known = {
        "key", "text", "type", "required", "categories", "range", "step", "resolution",
        "mechanism", "translations", "reuse",
    }  # fmt: skip
    for name in sorted(set(raw) - known):
        errors[str(name)] = [
            _("Unknown field; a question has %(fields)s.") % {"fields": ", ".join(sorted(known))}
        ]

    key = raw.get("key")
    if not isinstance(key, str) or not KEY_PATTERN.fullmatch(key):
        errors["key"] = [
            _("Must be 1-64 characters: a letter, then letters, digits or underscores.")
        ]
    text = raw.get("text", "")
    if text is None:
        text = ""
    if not isinstance(text, str) or len(text) > MAX_TEXT_LENGTH:
        errors["text"] = [
            _("Must be a string of at most %(limit)s characters.") % {"limit": MAX_TEXT_LENGTH}
        ]
    required = raw.get("required", True)
    if not isinstance(required, bool):
        errors["required"] = [_("Must be true or false.")]
    qtype = raw.get("type")
    if qtype not in QUESTION_TYPES:
        errors["type"] = [_("Must be one of %(choices)s.") % {"choices": ", ".join(QUESTION_TYPES)}]
        qtype = None

    categories: tuple[str, ...] = ()
    value_range: tuple[float, float] | None = None
    raw_categories = raw.get("categories")
    raw_range = raw.get("range")
    if qtype in DISCRETE_TYPES:
        if raw_range is not None:
            errors["range"] = [
                _("A %(type)s question has categories, not a range.") % {"type": qtype}
            ]
        categories_error = _categories_error(raw_categories, qtype, max_categories)
        if categories_error:
            errors["categories"] = [categories_error]
        else:
            categories = tuple(raw_categories)
    elif qtype == "continuous":
        if raw_categories not in (None, []):
            errors["categories"] = [_("A continuous question has a range, not categories.")]
        if (
            not isinstance(raw_range, (list, tuple))
            or len(raw_range) != 2
            or not all(is_number(v) and math.isfinite(v) for v in raw_range)
        ):
            errors["range"] = [_("Must be [low, high], two finite numbers.")]
        elif not raw_range[0] < raw_range[1]:
            errors["range"] = [
                _("low must be below high, got [%(low)s, %(high)s].")
                % {"low": raw_range[0], "high": raw_range[1]}
            ]
        elif not all(abs(v) <= RANGE_BOUND for v in raw_range):
            errors["range"] = [
                _("Both ends must lie within [-%(bound)s, %(bound)s], got [%(low)s, %(high)s].")
                % {
                    "bound": f"{RANGE_BOUND:g}",
                    "low": f"{raw_range[0]:g}",
                    "high": f"{raw_range[1]:g}",
                }
            ]
        else:
            value_range = (float(raw_range[0]), float(raw_range[1]))

    step = _step(raw.get("step"), qtype, value_range, errors)

    mechanism, params = "", {}
    raw_mechanism = raw.get("mechanism")
    if not isinstance(raw_mechanism, Mapping) or not isinstance(raw_mechanism.get("name"), str):
        errors["mechanism"] = [_('Must be an object with a "name", e.g. {"name": "none"}.')]
    elif qtype is not None:
        mechanism = raw_mechanism["name"]
        params = {k: v for k, v in raw_mechanism.items() if k != "name"}
        problem = None
        if "categories" not in errors and "range" not in errors:
            problem = mechanism_error(qtype, categories, value_range, mechanism, params)
        if problem:
            errors["mechanism"] = [problem]

    resolution = _resolution(raw.get("resolution"), qtype, value_range, step, mechanism, errors)

    translations = raw.get("translations") or {}
    if qtype is not None and "categories" not in errors:
        problem = translations_shape_error(translations, qtype, categories)
        if problem:
            errors["translations"] = [
                _("Question %(key)s: %(problem)s") % {"key": repr(key), "problem": problem}
            ]

    if resolution is not None and value_range is not None and "resolution" not in errors:
        problem = _grid_error(value_range, resolution)
        if problem:
            errors["resolution" if raw.get("resolution") is not None else "range"] = [problem]

    reuse = raw.get("reuse")
    problem = _reuse_shape_error(reuse, mechanism)
    if problem:
        errors["reuse"] = [problem]

    if errors:
        raise QuestionInvalid(errors)
    return QuestionSpec(
        translations=dict(translations),
        key=key,
        text=text,
        type=qtype,
        required=required,
        categories=categories,
        range=value_range,
        mechanism=mechanism,
        params=dict(params),
        step=step,
        resolution=resolution,
        reuse=None if reuse is None else {"survey": reuse["survey"], "question": reuse["question"]},
    )


def _reuse_shape_error(raw: Any, mechanism: str) -> str | None:
    """Why ``reuse`` is malformed: ``{"survey": <id>, "question": "<key>"}`` of a question
    whose report a client memoises (not one sent as given)."""
    if raw is None:
        return None
    if (
        not isinstance(raw, Mapping)
        or set(raw) != {"survey", "question"}
        or not isinstance(raw["survey"], int)
        or isinstance(raw["survey"], bool)
        or not 1 <= raw["survey"] < 2**63
        or not isinstance(raw["question"], str)
        or not KEY_PATTERN.fullmatch(raw["question"])
    ):
        return _('Must be {"survey": <id of an earlier survey>, "question": "<its key>"}.')
    if mechanism in ("none", "negative_manual"):
        return _(
            "A question answered as given (mechanism %(mechanism)s) cannot reuse an earlier "
            "report: there is no distorted report to keep, so ask it afresh."
        ) % {"mechanism": mechanism}
    return None


def parse_questions(
    raw: Any, *, max_questions: int = MAX_QUESTIONS, max_categories: int = MAX_CATEGORIES
) -> list[QuestionSpec]:
    """Validate a survey's question list (keys unique, at most ``max_questions``).

    Raises
    ------
    QuestionListInvalid
        With one entry per question (``{}`` for a good one), as DRF reports nested lists.
    """
    if not isinstance(raw, list):
        raise QuestionListInvalid([_("Must be a list of questions.")])
    if len(raw) > max_questions:
        raise QuestionListInvalid(
            [
                _("A survey has at most %(limit)s questions, got %(count)s.")
                % {"limit": max_questions, "count": len(raw)}
            ]
        )
    item_errors: list[dict[str, list[str]]] = []
    specs: list[QuestionSpec] = []
    first_index: dict[str, int] = {}
    for index, item in enumerate(raw):
        problems: dict[str, list[str]] = {}
        try:
            spec = parse_question(item, max_categories=max_categories)
        except QuestionInvalid as exc:
            problems = exc.errors
        else:
            specs.append(spec)
            if spec.key in first_index:
                problems["key"] = [
                    _("Duplicate key %(key)s: question %(index)s has it.")
                    % {"key": repr(spec.key), "index": first_index[spec.key]}
                ]
            else:
                first_index[spec.key] = index
        item_errors.append(problems)
    if any(item_errors):
        raise QuestionListInvalid(item_errors)
    return specs


def translations_shape_error(raw: Any, qtype: str, categories: tuple[str, ...]) -> str | None:
    """Why a question's ``translations`` is malformed: ``{language: {"text": str,
    "labels": [one per category]}}`` (labels only for discrete questions)."""
    if not isinstance(raw, Mapping):
        return _('Must be an object {"<language>": {"text": ..., "labels": [...]}}.')
    for language, entry in raw.items():
        if not isinstance(entry, Mapping) or set(entry) - {"text", "labels"}:
            return _('Language %(language)s: must be an object with "text" and "labels".') % {
                "language": repr(language)
            }
        text = entry.get("text", "")
        if not isinstance(text, str) or len(text) > MAX_TEXT_LENGTH:
            return _(
                "Language %(language)s: text must be a string of at most %(limit)s characters."
            ) % {"language": repr(language), "limit": MAX_TEXT_LENGTH}
        labels = entry.get("labels")
        if qtype not in DISCRETE_TYPES:
            if labels is not None:
                return _("Language %(language)s: a continuous question has no category labels.") % {
                    "language": repr(language)
                }
            continue
        if (
            not isinstance(labels, list)
            or len(labels) != len(categories)
            or not all(isinstance(v, str) and 0 < len(v) <= MAX_LABEL_LENGTH for v in labels)
        ):
            return _(
                "Language %(language)s: a label is missing; give %(count)s labels, one per "
                "category %(categories)s, in order."
            ) % {
                "language": repr(language),
                "count": len(categories),
                "categories": repr(list(categories)),
            }
    return None


def translations_error(
    specs: Iterable[QuestionSpec], languages: Iterable[str]
) -> tuple[int, str, str] | None:
    """The first question translated into a language the organisation does not use:
    (index, key, message)."""
    allowed = list(languages)
    for index, spec in enumerate(specs):
        for language in spec.translations:
            if language not in allowed:
                return (
                    index,
                    spec.key,
                    _(
                        "Question %(key)s: language %(language)s is not one of the "
                        "organisation's languages (%(languages)s)."
                    )
                    % {
                        "key": repr(spec.key),
                        "language": repr(language),
                        "languages": ", ".join(allowed) or _("none"),
                    },
                )
    return None


class QuestionListInvalid(ValueError):
    def __init__(self, errors: list[Any]) -> None:
        bad = (
            [i for i, e in enumerate(errors) if e] if errors and isinstance(errors[0], dict) else []
        )
        super().__init__(f"invalid questions {bad}" if bad else str(errors))
        self.errors = errors


def _categories_error(raw: Any, qtype: str, max_categories: int = MAX_CATEGORIES) -> str | None:
    if not isinstance(raw, list) or not all(isinstance(c, str) for c in raw):
        return _("Must be a list of category labels (strings).")
    if qtype == "binary" and len(raw) != 2:
        return _("A binary question has exactly 2 categories, got %(count)s.") % {"count": len(raw)}
    limit = min(max_categories, MAX_CATEGORIES)
    if not 2 <= len(raw) <= limit:
        return _("Must have between 2 and %(limit)s categories, got %(count)s.") % {
            "limit": limit,
            "count": len(raw),
        }
    for label in raw:
        if not 1 <= len(label) <= MAX_LABEL_LENGTH or label != label.strip():
            return _(
                "Labels must be 1-%(limit)s characters without surrounding spaces, got %(label)s."
            ) % {"limit": MAX_LABEL_LENGTH, "label": repr(label)}
    seen: set[str] = set()
    for label in raw:
        if label in seen:
            return _("Duplicate category label %(label)s.") % {"label": repr(label)}
        seen.add(label)
    return None


def mechanism_error(
    qtype: str,
    categories: Sequence[str],
    value_range: tuple[float, float] | None,
    name: str,
    params: Mapping[str, Any],
) -> str | None:
    """Why this mechanism cannot distort this question, or ``None`` if it can."""
    discrete = qtype in DISCRETE_TYPES
    table = DISCRETE_MECHANISMS if discrete else CONTINUOUS_MECHANISMS
    if name not in table:
        return _("%(name)s is not a mechanism for a %(type)s question; use one of %(choices)s.") % {
            "name": repr(name),
            "type": qtype,
            "choices": ", ".join(table),
        }
    unexpected = sorted(set(params) - set(table[name]))
    if unexpected:
        allowed = ", ".join(table[name]) or _("no parameters")
        return _("%(name)s does not take %(unexpected)s (it takes %(allowed)s).") % {
            "name": name,
            "unexpected": ", ".join(unexpected),
            "allowed": allowed,
        }
    if table is DISCRETE_MECHANISMS and DISCRETE[name].ordinal_only and qtype != "ordinal":
        return _("negative_gaussian needs ordered categories: use it on an ordinal question.")
    for param, value in params.items():
        if param == "matrix":
            continue
        if not is_number(value):
            return _("%(param)s must be a number, got %(value)s.") % {
                "param": param,
                "value": repr(value),
            }
        if not math.isfinite(value):
            return _("%(param)s must be a finite number, got %(value)s.") % {
                "param": param,
                "value": repr(value),
            }
        if value_range is not None and param in ("sigma", "half_width", "scale", "sensitivity"):
            floor = MIN_NOISE_RANGE_FACTOR * (value_range[1] - value_range[0])
            if value < floor:
                return _(
                    "%(param)s must be at least %(floor)s (%(factor)s times the range's "
                    "width), got %(value)s."
                ) % {
                    "param": param,
                    "factor": f"{MIN_NOISE_RANGE_FACTOR:g}",
                    "floor": f"{floor:g}",
                    "value": f"{value:g}",
                }
            limit = NOISE_RANGE_FACTOR * (value_range[1] - value_range[0])
            if value > limit:
                return _(
                    "%(param)s must be at most %(factor)s times the range's width "
                    "(%(limit)s), got %(value)s."
                ) % {
                    "param": param,
                    "factor": f"{NOISE_RANGE_FACTOR:g}",
                    "limit": f"{limit:g}",
                    "value": f"{value:g}",
                }
    sigma = params.get("sigma")
    if discrete and name == "negative_gaussian" and is_number(sigma) and sigma < MIN_CATEGORY_SIGMA:
        return _("sigma must be at least %(limit)s category steps, got %(value)s.") % {
            "limit": f"{MIN_CATEGORY_SIGMA:g}",
            "value": f"{sigma:g}",
        }
    try:
        if discrete:
            channel = discrete_channel(len(categories), name, params)
            if name != "negative_manual":  # its rows come from calibration later
                retain = params.get("retain") if name == "randomised_response" else None
                checked = channel_conditioning(channel, retain=retain)
                if checked.problem is not None:
                    return f"{name}: {translate(checked.problem)}."
        else:
            assert value_range is not None
            noise = continuous_noise(value_range, name, params)
            if name == "additive_staircase":
                # As for Laplace noise of scale <= NOISE_RANGE_FACTOR * width: a tiny
                # epsilon makes the staircase as wide as Laplace noise of scale Δ / ε.
                limit = math.sqrt(2.0) * NOISE_RANGE_FACTOR * (value_range[1] - value_range[0])
                std = float(getattr(noise, "std", 0.0))
                if std > limit:
                    return _(
                        "epsilon %(epsilon)s and sensitivity %(sensitivity)s give noise of "
                        "standard deviation %(std)s, more than %(limit)s (that of Laplace noise of "
                        "scale %(factor)s times the range's width): raise epsilon or lower "
                        "sensitivity."
                    ) % {
                        "epsilon": f"{float(params['epsilon']):g}",
                        "sensitivity": f"{float(params['sensitivity']):g}",
                        "std": f"{std:.3g}",
                        "limit": f"{limit:.3g}",
                        "factor": f"{NOISE_RANGE_FACTOR:g}",
                    }
    except ValueError as exc:
        return f"{name}: {translate(exc)}"
    return None


def discrete_channel(
    k: int, name: str, params: Mapping[str, Any], pairs: NDArray[np.integer] | None = None
) -> NDArray[np.float64]:
    """The channel ``C[i, j] = Pr(reported j | true i)`` of a discrete mechanism.

    ``pairs`` are the (true, negative) calibration codes of a ``negative_manual``
    question (000_1b7f9a8e281301b4.txt, Section 4.1); uniform rows where there are none.
    """
    mechanism = DISCRETE.get(name)
    if mechanism is None:
        raise ValueError(_("unknown discrete mechanism %(name)s") % {"name": repr(name)})
    return mechanism.channel(k, params, pairs)


def continuous_noise(
    value_range: tuple[float, float],
    name: str,
    params: Mapping[str, Any],
    resolution: float | None = None,
):
    """The noise model of a continuous mechanism (``retention_replacement`` draws from range);
    with a ``resolution``, its form on the reporting grid from the range's low end
    (:mod:`privacy.mechanisms.grid`: discrete noise, exact discrete channels)."""
    mechanism = CONTINUOUS.get(name)
    if mechanism is None:
        return noise_model(name, **params)  # refuses the unknown name
    model = mechanism.noise(value_range, params)
    if resolution is None:
        return model
    return grid_noise(model, value_range[0], resolution)


def question_noise(question: Any):
    """The noise model of a stored continuous question (on its grid where it has one)."""
    return continuous_noise(
        (question.range_low, question.range_high),
        question.mechanism,
        question.mechanism_params or {},
        getattr(question, "resolution", None),
    )


def continuous_epsilon(
    name: str,
    params: Mapping[str, Any],
    value_range: tuple[float, float],
    resolution: float | None = None,
) -> float | None:
    """Pure ε of local differential privacy of a continuous mechanism on its range, where
    it is finite (:meth:`privacy.mechanisms.descriptors.Mechanism.epsilon`: the staircase
    whose sensitivity covers the range; Laplace noise and retention replacement on a
    reporting grid); ``None`` otherwise."""
    mechanism = CONTINUOUS.get(name)
    return None if mechanism is None else mechanism.epsilon(params, value_range, resolution)


def question_epsilon(question: Any) -> float | None:
    """ε of local differential privacy one report of a stored question reveals, as the
    scheme publishes it; ``None`` where unbounded (every negative survey, Gaussian or
    uniform noise, a ``mechanism: none`` question's true answer)."""
    if question.type in DISCRETE_TYPES:
        if question.mechanism == "negative_manual":
            return None  # its channel has a zero diagonal, whatever the calibration says
        channel = discrete_channel(
            question.n_categories, question.mechanism, question.mechanism_params
        )
        return epsilon(channel)
    return continuous_epsilon(
        question.mechanism,
        question.mechanism_params,
        (question.range_low, question.range_high),
        getattr(question, "resolution", None),
    )


def question_cost(question: Any) -> float | None:
    """What one report of a question costs a resident's privacy budget (issue 28): 0 for
    ``mechanism: none`` (declared non-sensitive), else its ε (``None``: unbounded)."""
    if question.mechanism == "none":
        return 0.0
    return question_epsilon(question)


def epsilon_total(questions: Iterable[Any]) -> float | None:
    """A survey's ``epsilon_total``: the sum of its questions' costs, a question that asks
    again an earlier one (``reuse``) counting 0; ``None`` when a sensitive question's ε
    is unbounded."""
    total = 0.0
    for question in questions:
        if getattr(question, "reuse", None):
            continue
        cost = question_cost(question)
        if cost is None:
            return None
        total += cost
    return total


# --------------------------------------------------------------------------- scheme


def mechanism_json(name: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, **params}


def question_scheme(question: Any, channel: NDArray[np.float64] | None = None) -> dict[str, Any]:
    """What a client needs to distort one question (nothing secret).

    A discrete question carries its full ``channel`` in ``categories`` order and
    ``epsilon``; a ``negative_manual`` one carries an ``instruction`` instead (its channel
    is estimated from calibration data, there is nothing to sample); a continuous one its
    ``range`` and the mechanism's parameters.
    """
    entry: dict[str, Any] = {
        "key": question.key,
        "text": question.text,
        "type": question.type,
        "required": question.required,
        "translations": dict(getattr(question, "translations", None) or {}),
    }
    if question.type in DISCRETE_TYPES:
        entry["categories"] = list(question.categories)
    else:
        entry["range"] = [question.range_low, question.range_high]
        if getattr(question, "step", None) is not None:
            entry["step"] = question.step
    entry["mechanism"] = mechanism_json(question.mechanism, question.mechanism_params)
    if question.type not in DISCRETE_TYPES and question.mechanism != "none":
        entry.update(grid_scheme(question))
    if question.type not in DISCRETE_TYPES:
        eps = continuous_epsilon(
            question.mechanism,
            question.mechanism_params,
            (question.range_low, question.range_high),
            getattr(question, "resolution", None),
        )
        if eps is not None:
            entry["epsilon"] = eps
    if getattr(question, "reuse", None):
        entry["reuse"] = dict(question.reuse)
    if question.type in DISCRETE_TYPES:
        if question.mechanism == "negative_manual":
            entry["instruction"] = NEGATIVE_MANUAL_INSTRUCTION
        else:
            if channel is None:
                channel = discrete_channel(
                    question.n_categories, question.mechanism, question.mechanism_params
                )
            entry["channel"] = channel.tolist()
            entry["epsilon"] = epsilon(channel)
    return entry


LEGACY_NOISE_NOTE = (
    "Collected under the old continuous noise law: this survey was created before the "
    "reporting grid, so its reports are accepted as before (floating-point noise, whose "
    "last bits can leak the true value; Mironov 2012). New surveys use the grid."
)


def grid_scheme(question: Any) -> dict[str, Any]:
    """The reporting grid a client needs (issue 31): ``resolution`` and ``grid`` (origin,
    resolution and the discrete law with its exact parameters), or, for a question
    created before the grid, ``grid: null`` and a note that the old law applies."""
    resolution = getattr(question, "resolution", None)
    if resolution is None:
        return {"grid": None, "noise_note": LEGACY_NOISE_NOTE}
    model = question_noise(question)
    grid = model.scheme()
    per_step = getattr(model, "epsilon_per_step", None)
    if per_step is not None:
        grid["epsilon_per_step"] = per_step()
    return {"resolution": resolution, "grid": grid}
