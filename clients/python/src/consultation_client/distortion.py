"""Distortion of one resident's answers against a published scheme, in plain Python.

The twin of the browser library ``@consultations/distort`` (``clients/js/src/distort.js``):
a discrete answer is replaced by a draw from row *i* of the question's published channel
``C[i, j] = Pr(reported j | true i)`` (randomised response, the uniform and Gaussian negative
surveys: seed document 000_1b7f9a8e281301b4.txt, sections 2-3, and 001_28af1923c784b480.txt,
section 3), a number gets the published additive noise (uniform, Gaussian, Laplace, or the
staircase noise of Geng & Viswanath, "The optimal noise-adding mechanism in differential
privacy", IEEE Trans. Inf. Theory 62(2), 2016) or is retained with probability ``retain`` and
otherwise replaced by a uniform draw from the range.

A question whose scheme entry carries a ``grid`` (every survey created since the reporting
grid) is distorted exactly on it, with integer arithmetic (:mod:`consultation_client.grid`):
randomised rounding, then discrete Laplace, Gaussian, staircase or uniform noise, and the
report is a grid value. Floating-point noise is kept only for surveys created before the
grid (their scheme has ``grid: null`` and a ``noise_note``).

Randomness comes from :class:`random.SystemRandom` (the operating system's generator that
:mod:`secrets` uses): a seedable generator's state can be recovered from a few outputs, which
would let an observer undo the noise. Tests may pass their own ``rng``; portals must not.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from consultation_client.grid import grid_report

__all__ = ["distort_answer", "distort_answers", "localise_question", "pick_language"]

Answer = str | float
SAMPLED_DISCRETE = frozenset({"randomised_response", "negative_uniform", "negative_gaussian"})
AS_IS_DISCRETE = frozenset({"none", "negative_manual"})
CONTINUOUS = frozenset(
    {
        "none",
        "additive_uniform",
        "additive_gaussian",
        "additive_laplace",
        "additive_staircase",
        "retention_replacement",
    }
)
DISCRETE_TYPES = frozenset({"binary", "nominal", "ordinal"})
ROW_SUM_TOLERANCE = 1e-6

_SYSTEM_RANDOM = random.SystemRandom()


def _fail(question: Mapping[str, Any], message: str) -> ValueError:
    return ValueError(f"question {question.get('key')!r}: {message}")


def _positive(question: Mapping[str, Any], name: str) -> float:
    value = question["mechanism"].get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise _fail(
            question, f"mechanism parameter {name!r} must be a positive number, got {value!r}"
        )
    if not math.isfinite(value):
        raise _fail(question, f"mechanism parameter {name!r} must be finite, got {value!r}")
    return float(value)


def _channel_row(question: Mapping[str, Any], index: int) -> Sequence[float]:
    categories = question["categories"]
    channel = question.get("channel")
    k = len(categories)
    if not isinstance(channel, list) or len(channel) != k:
        raise _fail(question, f"the scheme must carry a {k}x{k} channel")
    for row in channel:
        if not isinstance(row, list) or len(row) != k:
            raise _fail(question, f"the scheme must carry a {k}x{k} channel")
        if any(
            isinstance(p, bool) or not isinstance(p, (int, float)) or not (0 <= p < math.inf)
            for p in row
        ):
            raise _fail(question, "every channel row must hold non-negative probabilities")
        if abs(sum(row) - 1.0) > ROW_SUM_TOLERANCE:
            raise _fail(question, f"a channel row sums to {sum(row):.9g}, not 1")
    row = channel[index]
    return [float(p) for p in row]


def _sample_row(row: Sequence[float], rng: random.Random) -> int:
    # Inverse CDF; scaling by the sum absorbs rounding in the published probabilities.
    u = rng.random() * sum(row)
    cumulative = 0.0
    last = -1
    for j, p in enumerate(row):
        if p <= 0:
            continue
        cumulative += p
        last = j
        if u < cumulative:
            return j
    return last


def _distort_discrete(question: Mapping[str, Any], value: Any, rng: random.Random) -> str:
    categories = list(question.get("categories") or [])
    if len(categories) < 2:
        raise _fail(question, "a discrete question needs at least two categories")
    name = question["mechanism"]["name"]
    if name not in SAMPLED_DISCRETE | AS_IS_DISCRETE:
        raise _fail(question, f"unknown mechanism {name!r} for a {question['type']} question")
    if not isinstance(value, str):
        raise _fail(question, f"the answer must be a category label (a string), got {value!r}")
    if value not in categories:
        raise _fail(question, f"unknown category {value!r}; expected one of {categories!r}")
    if name in AS_IS_DISCRETE:  # negative_manual: the resident's own "not me" choice
        return value
    return str(categories[_sample_row(_channel_row(question, categories.index(value)), rng)])


def _range(question: Mapping[str, Any]) -> tuple[float, float] | None:
    bounds = question.get("range")
    if bounds is None:
        return None
    if not (
        isinstance(bounds, (list, tuple))
        and len(bounds) == 2
        and all(isinstance(b, (int, float)) and math.isfinite(b) for b in bounds)
        and bounds[0] < bounds[1]
    ):
        raise _fail(question, f"needs a range [low, high], got {bounds!r}")
    return float(bounds[0]), float(bounds[1])


def _laplace(scale: float, rng: random.Random) -> float:
    u = rng.random()
    while u == 0.0:
        u = rng.random()
    return scale * math.log(2 * u) if u < 0.5 else -scale * math.log(2 * (1 - u))


def _staircase(epsilon: float, delta: float, rng: random.Random) -> float:
    """One draw of the staircase noise (Geng & Viswanath 2016, as the server publishes it).

    With ``gamma = 1 / (1 + e^(eps/2))`` and ``b = e^-eps`` the density is ``a b^k`` on
    ``|z|`` in ``[k, k + gamma) delta`` and ``a b^(k+1)`` on ``[k + gamma, k + 1) delta``.
    Drawn as ``S delta (G + gamma U)`` when ``B = 0``, else
    ``S delta (G + gamma + (1 - gamma) U)``: sign ``S = +-1``, geometric
    ``Pr(G = k) = (1 - b) b^k``, ``Pr(B = 0) = gamma / (gamma + (1 - gamma) b)``, ``U``
    uniform on [0, 1).
    """
    gamma = 1.0 / (1.0 + math.exp(epsilon / 2)) if epsilon / 2 < 709 else 0.0
    # gamma / (gamma + (1 - gamma) e^-eps), multiplied through by 1 + e^(eps/2): no 0/0 and
    # no overflow for a large eps.
    p_inner = 1.0 / (1.0 + math.exp(-epsilon / 2))
    sign = -1.0 if rng.random() < 0.5 else 1.0
    # floor(ln(U') / ln(b)) with U' uniform on (0, 1] and ln(b) = -eps exactly.
    stairs = math.log(1.0 - rng.random()) / -epsilon
    g = math.floor(stairs) if math.isfinite(stairs) else stairs  # inf: refused by the caller
    inner = rng.random() < p_inner
    u = rng.random()
    return sign * delta * (g + gamma * u if inner else g + gamma + (1 - gamma) * u)


def _distort_continuous(question: Mapping[str, Any], value: Any, rng: random.Random) -> float:
    name = question["mechanism"]["name"]
    if name not in CONTINUOUS:
        raise _fail(question, f"unknown mechanism {name!r} for a continuous question")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(question, f"the answer must be a finite number, got {value!r}")
    value = float(value)
    bounds = _range(question)
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise _fail(question, f"answer {value!r} is outside the range [{bounds[0]}, {bounds[1]}]")
    if name == "none":
        return value
    grid = question.get("grid")
    if grid is not None:  # surveys created under the reporting grid: exact discrete noise
        if not isinstance(grid, Mapping):
            raise _fail(question, f"the scheme's grid must be an object, got {grid!r}")
        try:
            return grid_report(grid, value, rng)
        except ValueError as exc:
            raise _fail(question, str(exc)) from None
    # Surveys created before the grid (the scheme's noise_note): the old continuous law.
    if name == "additive_uniform":
        half_width = _positive(question, "half_width")
        return value + rng.uniform(-half_width, half_width)
    if name == "additive_gaussian":
        return value + rng.gauss(0.0, _positive(question, "sigma"))
    if name == "additive_laplace":
        return value + _laplace(_positive(question, "scale"), rng)
    if name == "additive_staircase":
        epsilon = _positive(question, "epsilon")
        sent = value + _staircase(epsilon, _positive(question, "sensitivity"), rng)
        if not math.isfinite(sent):
            raise _fail(
                question,
                f"mechanism parameters 'epsilon' {epsilon!r} and 'sensitivity' give noise "
                "too large to send",
            )
        return sent
    retain = question["mechanism"].get("retain")
    if isinstance(retain, bool) or not isinstance(retain, (int, float)) or not 0 < retain <= 1:
        raise _fail(question, f"'retain' must be in (0, 1], got {retain!r}")
    if bounds is None:
        raise _fail(question, "retention_replacement needs the question's range")
    return value if rng.random() < retain else rng.uniform(*bounds)


def distort_answer(
    question: Mapping[str, Any], value: Answer, *, rng: random.Random | None = None
) -> Answer:
    """The value to send for one question of a published scheme, given the true answer.

    Parameters
    ----------
    question : mapping
        One entry of the scheme's ``questions``.
    value : str or float
        The true answer: a category wire value, or a number for a continuous question.
    rng : random.Random, optional
        Defaults to the operating system's generator. Only tests should pass one.

    Raises
    ------
    ValueError
        Naming the question: unknown category, a number outside the range, a broken
        scheme entry (missing channel, unknown mechanism).
    """
    if not isinstance(question, Mapping) or not isinstance(question.get("mechanism"), Mapping):
        raise ValueError("not a question of a published scheme (missing mechanism)")
    generator = rng or _SYSTEM_RANDOM
    kind = question.get("type")
    if kind == "continuous":
        return _distort_continuous(question, value, generator)
    if kind in DISCRETE_TYPES:
        return _distort_discrete(question, value, generator)
    raise _fail(question, f"unknown question type {kind!r}")


def memo_key(survey_id: Any, participant: str, question_key: str) -> str:
    """The key under which :func:`distort_answers` keeps a participant's report of one
    question (``"<survey id>:<participant>:<question key>"``)."""
    return f"{survey_id}:{participant}:{question_key}"


def _memo_key_of(scheme: Mapping[str, Any], participant: str, question: Mapping[str, Any]) -> str:
    # A question asked again ("reuse": {"survey": S, "question": K}) is kept under the
    # earlier question, so the report sent then is sent again (RAPPOR's permanent
    # randomisation); survey ids are unique across consultations.
    reuse = question.get("reuse")
    if isinstance(reuse, Mapping) and isinstance(reuse.get("question"), str):
        return memo_key(reuse.get("survey"), participant, reuse["question"])
    return memo_key(scheme.get("survey"), participant, question["key"])


def _sent_as_is(question: Mapping[str, Any]) -> bool:
    name = question["mechanism"].get("name")
    return name == "none" or (question.get("type") != "continuous" and name == "negative_manual")


def _plausible(question: Mapping[str, Any], value: Any) -> bool:
    """A kept report the scheme could have produced (a stale or tampered one is not)."""
    if question.get("type") == "continuous":
        return (
            isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        )
    return isinstance(value, str) and value in (question.get("categories") or [])


def distort_answers(
    scheme: Mapping[str, Any],
    answers: Mapping[str, Answer],
    *,
    rng: random.Random | None = None,
    participant: str | None = None,
    memo: MutableMapping[str, Answer] | None = None,
) -> dict[str, Answer]:
    """Distort one resident's answers ``{question key: true answer}``; every answer is
    validated before any is drawn, so a bad one leaves nothing half-done.

    With ``participant`` and ``memo`` (any mutable mapping the portal keeps for the
    resident, e.g. a shelve or a database-backed dict), each drawn report is kept under
    :func:`memo_key` and sent again on a later call (permanent randomisation: answering
    again cannot average the noise away), and a question that asks again an earlier one
    (``reuse`` in the scheme) re-sends the report kept for that one, which the server
    checks and charges no privacy budget for. Only distorted reports are kept, never a
    true answer (answers sent as given are not kept).
    """
    questions = scheme.get("questions") if isinstance(scheme, Mapping) else None
    if not isinstance(questions, list):
        raise ValueError("not a published scheme: 'questions' is missing")
    by_key = {question["key"]: question for question in questions}
    unknown = [key for key in answers if key not in by_key]
    if unknown:
        raise ValueError(f"unknown question {unknown[0]!r} for survey {scheme.get('survey')}")
    drawn = {key: distort_answer(by_key[key], value, rng=rng) for key, value in answers.items()}
    if participant is None or memo is None:
        return drawn
    sent: dict[str, Answer] = {}
    fresh: dict[str, Answer] = {}
    for key, value in drawn.items():
        question = by_key[key]
        if _sent_as_is(question):
            sent[key] = value
            continue
        name = _memo_key_of(scheme, participant, question)
        kept = memo.get(name)
        if kept is not None and _plausible(question, kept):
            sent[key] = kept
        else:
            sent[key] = fresh[name] = value
    memo.update(fresh)
    return sent


def _primary(tag: str) -> str:
    return str(tag).lower().replace("_", "-").split("-")[0]


def pick_language(question: Mapping[str, Any], preferred: str | Sequence[str]) -> str | None:
    """The first preferred language (exact, then primary subtag) the question is translated
    into, or ``None``."""
    available = list((question.get("translations") or {}).keys())
    for tag in [preferred] if isinstance(preferred, str) else list(preferred):
        for code in available:
            if code.lower() == str(tag).lower():
                return code
        for code in available:
            if _primary(code) == _primary(tag):
                return code
    return None


def localise_question(
    question: Mapping[str, Any], preferred: str | Sequence[str]
) -> dict[str, Any]:
    """What to show a resident: ``{"language", "text", "options": [{"value", "label"}]}``.

    ``value`` is the stable wire value to answer with; ``label`` is in the resident's
    language where the scheme has it.
    """
    language = pick_language(question, preferred)
    translation = question["translations"][language] if language else {}
    categories = list(question.get("categories") or [])
    labels = translation.get("labels")
    if not (isinstance(labels, list) and len(labels) == len(categories)):
        labels = categories
    return {
        "language": language,
        "text": translation.get("text") or question.get("text") or question.get("key"),
        "options": [
            {"value": value, "label": label}
            for value, label in zip(categories, labels, strict=True)
        ],
    }
