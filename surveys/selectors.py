"""Reads of the surveys app: scoped querysets, schemes, and answers as numpy arrays.

The analysis engine (``reconstruction``) consumes :func:`question_codes`,
:func:`question_values`, :func:`reported_code_counts`, :func:`question_channel`,
:func:`question_noise`, :func:`attribute_table` and :func:`survey_response_count`. They
only ever see answers of responses that have not been withdrawn, and they read with one
SQL statement each (a raw cursor fetch straight into numpy, a ``GROUP BY`` for counts),
so their cost does not depend on Django's per-row model machinery.
"""

from __future__ import annotations

import copy
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.db import connection
from django.db.models import Count, Prefetch, Q, QuerySet
from django.utils.translation import gettext_noop
from numpy.typing import NDArray

from consultations.models import Organisation
from privacy.mechanisms.messages import InputError
from surveys import answers, schemes
from surveys.models import Answer, CalibrationPair, Participant, Question, Response, Survey

_ANSWER = Answer._meta.db_table
_RESPONSE = Response._meta.db_table
_PARTICIPANT = Participant._meta.db_table


# --------------------------------------------------------------------------- querysets


def survey_list(
    *,
    organisation: Organisation,
    consultation: int | None = None,
    kind: str | None = None,
    status: str | None = None,
) -> QuerySet[Survey]:
    """The organisation's surveys, newest first, with their questions prefetched."""
    queryset = Survey.objects.filter(consultation__organisation=organisation)
    if consultation is not None:
        queryset = queryset.filter(consultation_id=consultation)
    if kind:
        queryset = queryset.filter(kind=kind)
    if status:
        queryset = queryset.filter(status=status)
    return (
        queryset.prefetch_related(
            Prefetch("questions", queryset=Question.objects.order_by("position"))
        )
        .annotate(response_count=Count("responses", filter=Q(responses__withdrawn_at__isnull=True)))
        .order_by("-created_at", "-id")
    )


def survey_get(*, organisation: Organisation, pk: Any) -> Survey | None:
    """One survey of the organisation (``None`` for another organisation's or none)."""
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        return None
    return (
        Survey.objects.select_related("consultation")
        .filter(pk=pk, consultation__organisation_id=organisation.pk)
        .first()
    )


_OPEN_SURVEYS: dict[tuple[int, int], Survey] = {}
_OPEN_SURVEYS_LIMIT = 1024


def survey_for_submission(*, organisation: Organisation, pk: Any) -> Survey | None:
    """Like :func:`survey_get` for the submission hot path.

    An open survey is remembered per process: its organisation, consultation and
    ``opened_at`` never change, and the services' insert re-checks in SQL that the row
    is still that survey and still open (so a close is seen at once).
    """
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        return None
    key = (pk, organisation.pk)
    cached = _OPEN_SURVEYS.get(key)
    if cached is not None:
        return copy.copy(cached)
    survey = survey_get(organisation=organisation, pk=pk)
    if survey is not None and survey.status == Survey.Status.OPEN:
        if len(_OPEN_SURVEYS) >= _OPEN_SURVEYS_LIMIT:
            _OPEN_SURVEYS.clear()
        _OPEN_SURVEYS[key] = copy.copy(survey)
    return survey


def survey_forget(pk: Any) -> None:
    """Drop a remembered survey (it closed, or its row is not what was remembered)."""
    for key in [k for k in _OPEN_SURVEYS if k[0] == pk]:
        _OPEN_SURVEYS.pop(key, None)


def survey_questions(survey: Survey) -> list[Question]:
    return list(Question.objects.filter(survey=survey).order_by("position"))


_FORMS: dict[tuple[int, Any], answers.AnswerForm] = {}
_FORMS_LIMIT = 512


def survey_answer_form(survey: Survey) -> answers.AnswerForm:
    """Per-question lookups (label -> code, reported bounds) to validate answers fast.

    Cached per process once the survey has opened: its questions are frozen then.
    """
    if survey.status == Survey.Status.DRAFT or survey.opened_at is None:
        return answers.answer_form(survey_questions(survey))
    cache_key = (survey.pk, survey.opened_at)
    form = _FORMS.get(cache_key)
    if form is None:
        form = answers.answer_form(survey_questions(survey))
        if len(_FORMS) >= _FORMS_LIMIT:
            _FORMS.clear()
        _FORMS[cache_key] = form
    return form


_SCHEMES: dict[tuple[int, Any], list[dict[str, Any]]] = {}
_SCHEMES_LIMIT = 64


def survey_scheme(survey: Survey) -> dict[str, Any]:
    """The published scheme: what a client needs to distort, and nothing secret.

    Each discrete question that a client distorts carries its full ``channel`` (rows =
    true category in ``categories`` order) and ``epsilon``; ``negative_manual`` carries
    an ``instruction`` instead; continuous questions carry ``range`` and the mechanism.

    The questions' part (channels: k x k numbers per question) is built once per process
    after the survey opened, when its questions are frozen (issue 13, finding 5: with
    the public portal key a large survey's scheme was rebuilt on every GET).
    """
    questions: list[dict[str, Any]] | None = None
    cache_key = (survey.pk, survey.opened_at)
    frozen = survey.status != Survey.Status.DRAFT and survey.opened_at is not None
    if frozen:
        questions = _SCHEMES.get(cache_key)
    if questions is None:
        questions = [schemes.question_scheme(q) for q in survey_questions(survey)]
        if frozen:
            if len(_SCHEMES) >= _SCHEMES_LIMIT:
                _SCHEMES.clear()
            _SCHEMES[cache_key] = questions
    return {
        "survey": survey.pk,
        "title": survey.title,
        "kind": survey.kind,
        "status": survey.status,
        # Issue 28: what one response costs a resident's budget, and the budget.
        "epsilon_total": _epsilon_total(questions),
        "privacy_budget": survey.consultation.privacy_budget,
        "questions": questions,
    }


def _epsilon_total(questions: list[dict[str, Any]]) -> float | None:
    """:func:`surveys.schemes.epsilon_total` from the published questions (the same ε)."""
    total = 0.0
    for question in questions:
        if question.get("reuse") or question["mechanism"]["name"] == "none":
            continue
        eps = question.get("epsilon")
        if eps is None:
            return None
        total += eps
    return total


@dataclass(frozen=True)
class RenderedScheme:
    """A survey's scheme as the bytes sent to clients, with its strong ``ETag``."""

    body: bytes
    etag: str


_RENDERED: OrderedDict[tuple[Any, ...], RenderedScheme] = OrderedDict()
_RENDERED_BYTES_LIMIT = 64 * 2**20
"""Bytes of rendered schemes a process keeps (least recently used dropped first)."""


def survey_scheme_rendered(survey: Survey, render: Callable[[Any], bytes]) -> RenderedScheme:
    """:func:`survey_scheme` rendered by ``render`` (the API's JSON renderer), cached.

    Issue 13, finding 5: a cached scheme of the largest allowed survey still cost its
    JSON rendering (5 MB) on every GET with the public portal key. Once the survey has
    opened its questions are frozen, so the rendered bytes are kept per process, keyed on
    everything else the scheme states (the survey's id, title, kind, status and opening
    time): a change of any of them (a new title, closing) is a new key, so a changed
    survey is never served stale. The ``ETag`` is a hash of the bytes, so a client that
    sends it back in ``If-None-Match`` gets a 304 without the body.
    """
    frozen = survey.status != Survey.Status.DRAFT and survey.opened_at is not None
    key = (
        survey.pk, survey.opened_at, survey.status, survey.title, survey.kind,
        survey.consultation.privacy_budget,
    )  # fmt: skip
    if frozen:
        hit = _RENDERED.get(key)
        if hit is not None:
            _RENDERED.move_to_end(key)
            return hit
    body = bytes(render(survey_scheme(survey)))
    rendered = RenderedScheme(body, '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"')
    if frozen and len(body) <= _RENDERED_BYTES_LIMIT:
        for old in [k for k in _RENDERED if k[0] == survey.pk]:
            del _RENDERED[old]  # the survey's earlier state (title, status) is not served
        _RENDERED[key] = rendered
        while sum(len(r.body) for r in _RENDERED.values()) > _RENDERED_BYTES_LIMIT:
            _RENDERED.popitem(last=False)
    return rendered


# --------------------------------------------------------------------------- arrays


def _fetch(sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


_LIVE_ANSWERS = (
    f"FROM {_ANSWER} a JOIN {_RESPONSE} r ON r.id = a.response_id "
    "WHERE a.question_id = %s AND r.withdrawn_at IS NULL"
)


def question_codes(question: Question) -> NDArray[np.int64]:
    """Reported category codes (``0..k-1``) of one discrete question, in response order.

    Only responses that have not been withdrawn count.
    """
    if not question.is_discrete:
        raise ValueError(f"question {question.key!r} is continuous; use question_values")
    rows = _fetch(f"SELECT a.code {_LIVE_ANSWERS} ORDER BY a.response_id", [question.pk])
    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))


def question_values(question: Question) -> NDArray[np.float64]:
    """Reported (distorted) values of one continuous question, in response order."""
    if question.is_discrete:
        raise ValueError(f"question {question.key!r} is discrete; use question_codes")
    rows = _fetch(f"SELECT a.value {_LIVE_ANSWERS} ORDER BY a.response_id", [question.pk])
    return np.fromiter((row[0] for row in rows), dtype=np.float64, count=len(rows))


def reported_code_counts(question: Question) -> NDArray[np.int64]:
    """How often each category was reported: length ``k``, one SQL ``GROUP BY``.

    These are the sufficient statistics of every discrete estimator.
    """
    if not question.is_discrete:
        raise ValueError(f"question {question.key!r} is continuous: it has no categories")
    counts = np.zeros(question.n_categories, dtype=np.int64)
    for code, count in _fetch(
        f"SELECT a.code, COUNT(*) {_LIVE_ANSWERS} GROUP BY a.code", [question.pk]
    ):
        counts[code] = count
    return counts


def calibration_pairs(question: Question) -> NDArray[np.int64]:
    """The (true, negative) code pairs uploaded for a ``negative_manual`` question, (m, 2)."""
    rows = list(
        CalibrationPair.objects.filter(question=question)
        .order_by("id")
        .values_list("true_code", "negative_code")
    )
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2)


def question_channel(question: Question) -> NDArray[np.float64]:
    """The channel ``C[i, j] = Pr(reported j | true i)`` of a discrete question.

    Identity for ``none``; for ``negative_manual`` the rows with calibration pairs are
    estimated from them and the others are uniform (000_1b7f9a8e281301b4.txt, Section 4.1,
    via :func:`privacy.mechanisms.manual_negative`).
    """
    if not question.is_discrete:
        raise ValueError(f"question {question.key!r} is continuous; use question_noise")
    pairs = calibration_pairs(question) if question.mechanism == "negative_manual" else None
    return schemes.discrete_channel(
        question.n_categories, question.mechanism, question.mechanism_params, pairs
    )


def question_noise(question: Question) -> Any:
    """The noise model (:func:`privacy.mechanisms.noise_model`) of a continuous question,
    in its reporting-grid form (exact discrete channels) where the question has a grid."""
    if question.is_discrete:
        raise ValueError(f"question {question.key!r} is discrete; use question_channel")
    return schemes.question_noise(question)


def survey_response_count(survey: Survey, *, using: str = "default") -> int:
    """Responses to the survey that have not been withdrawn."""
    return Response.objects.using(using).filter(survey=survey, withdrawn_at__isnull=True).count()


def profile_survey(survey: Survey) -> Survey | None:
    """The profile survey of the survey's consultation (``None`` if it has none)."""
    return Survey.objects.filter(
        consultation_id=survey.consultation_id, kind=Survey.Kind.PROFILE
    ).first()


def attribute_question(survey: Survey, key: str) -> Question:
    """The question an attribute names: the survey's own, else (for an opinion survey)
    its consultation's profile survey's.

    Raises
    ------
    ValueError
        No such question in either survey.
    """
    question = Question.objects.filter(survey=survey, key=key).first()
    if question is None and survey.kind == Survey.Kind.OPINION:
        question = Question.objects.filter(
            survey__consultation_id=survey.consultation_id,
            survey__kind=Survey.Kind.PROFILE,
            key=key,
        ).first()
    if question is None:
        if survey.kind == Survey.Kind.OPINION:
            template = gettext_noop(
                "unknown attribute %(key)s: no question of this survey or its consultation's "
                "profile survey has that key"
            )
        else:
            template = gettext_noop(
                "unknown attribute %(key)s: no question of this survey has that key"
            )
        raise InputError(template, key=repr(key))  # a ValueError; translated where shown
    return question


@dataclass(frozen=True)
class AttributeTable:
    """Answers of the same participants side by side.

    ``participants`` (references, sorted by internal id) and every column of ``columns``
    (codes as int64 for discrete questions, values as float64 for continuous ones) are
    aligned: row ``i`` is one participant.
    """

    participants: NDArray[np.str_]
    columns: dict[str, NDArray[Any]] = field(default_factory=dict)

    def __len__(self) -> int:
        return int(self.participants.shape[0])


def attribute_table(survey: Survey, keys: Sequence[str]) -> AttributeTable:
    """Answers to ``keys`` of the participants who answered all of them, aligned.

    A key names a question of ``survey`` or, for an opinion survey, of its consultation's
    profile survey, joined on the participant (inner join: only participants with a live
    response to ``survey`` and an answer to every key). With no keys, the table lists the
    survey's participants.

    Raises
    ------
    ValueError
        A key that names no question.
    """
    questions = [attribute_question(survey, key) for key in keys]
    base = _fetch(
        f"SELECT r.participant_id, p.reference FROM {_RESPONSE} r "
        f"JOIN {_PARTICIPANT} p ON p.id = r.participant_id "
        "WHERE r.survey_id = %s AND r.withdrawn_at IS NULL ORDER BY r.participant_id",
        [survey.pk],
    )
    base_ids = np.fromiter((row[0] for row in base), dtype=np.int64, count=len(base))
    ids = base_ids
    references = np.array([row[1] for row in base], dtype=str)
    raw_columns: list[tuple[NDArray[np.int64], NDArray[Any]]] = []
    for question in questions:
        column = "a.code" if question.is_discrete else "a.value"
        dtype = np.int64 if question.is_discrete else np.float64
        rows = _fetch(
            f"SELECT r.participant_id, {column} {_LIVE_ANSWERS} ORDER BY r.participant_id",
            [question.pk],
        )
        owners = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        values = np.fromiter((row[1] for row in rows), dtype=dtype, count=len(rows))
        raw_columns.append((owners, values))
        ids = np.intersect1d(ids, owners, assume_unique=True)
    columns: dict[str, NDArray[Any]] = {
        key: values[np.searchsorted(owners, ids)]
        for key, (owners, values) in zip(keys, raw_columns, strict=True)
    }
    participants = references[np.searchsorted(base_ids, ids)] if len(base) else references
    return AttributeTable(participants=participants, columns=columns)
