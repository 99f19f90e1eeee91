"""Writes of the surveys app: surveys and questions, responses, withdrawals, calibration.

Every function is keyword-only and atomic. Domain problems raise
:class:`core.errors.InvalidInput` (400), :class:`~core.errors.Conflict` (409) or
:class:`~core.errors.NotFound` (404), each naming the offending field or item.

Privacy: nothing here stores or logs a true value, a name, an address or a user agent;
residents' timestamps are coarsened to the hour (:func:`this_hour`).
"""

from __future__ import annotations

import hmac
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from consultations.models import Consultation, Organisation
from consultations.services import audit_record, consultation_create  # noqa: F401  (re-export)
from core.errors import Conflict, InvalidInput, NotFound
from surveys import answers, maintenance, privacy_budget, schemes, tallies
from surveys.ingest import (  # noqa: F401  (StaleSurvey, this_hour, token hash: re-exported)
    Batch,
    StaleSurvey,
    new_withdrawal_token,
    new_withdrawal_tokens,
    require_open,
    store,
    this_hour,
    withdrawal_token_hash,
)
from surveys.models import MAX_RETENTION_DAYS, CalibrationPair, Question, Response, Survey
from surveys.selectors import survey_answer_form
from surveys.tasks import statistics_tables_vacuum

MAX_BULK = 10_000
MAX_CALIBRATION_PAIRS = 100_000
UNCHANGED: Any = object()


# --------------------------------------------------------------------------- surveys


def question_limits() -> dict[str, int]:
    """The configured caps on questions per survey and categories per question."""
    return {
        "max_questions": int(getattr(settings, "SURVEY_MAX_QUESTIONS", schemes.MAX_QUESTIONS)),
        "max_categories": int(getattr(settings, "SURVEY_MAX_CATEGORIES", schemes.MAX_CATEGORIES)),
    }


def _parse_questions(
    questions: Any, organisation: Organisation | None = None
) -> list[schemes.QuestionSpec]:
    specs = _parse_question_list(questions)
    if organisation is not None:
        problem = schemes.translations_error(specs, organisation.languages or [])
        if problem:
            index, _key, message = problem
            errors: list[dict[str, list[str]]] = [{} for _ in specs]
            errors[index] = {"translations": [message]}
            raise InvalidInput(message, {"questions": errors})
    return specs


def validate_questions(
    questions: Any, organisation: Organisation | None = None, survey: Survey | None = None
) -> list[schemes.QuestionSpec]:
    """Validate a question list as the API does (same rules, same messages), storing
    nothing: the admin's survey builder calls it. With the saved ``survey`` the list is
    for, each ``reuse`` is checked too (as :func:`survey_update` does). Raises
    :class:`InvalidInput`."""
    specs = _parse_questions(questions, organisation)
    if survey is not None:
        specs = privacy_budget.resolve_reuse(
            consultation=survey.consultation, specs=specs, survey_pk=survey.pk
        )
    return specs


def _parse_question_list(questions: Any) -> list[schemes.QuestionSpec]:
    try:
        return schemes.parse_questions(questions, **question_limits())
    except schemes.QuestionListInvalid as exc:
        bad = [i for i, e in enumerate(exc.errors) if e and isinstance(e, dict)]
        detail = (
            ngettext("Invalid question %(items)s.", "Invalid questions %(items)s.", len(bad))
            % {"items": ", ".join(map(str, bad))}
            if bad
            else _("questions: must be a list of questions.")
        )
        raise InvalidInput(detail, {"questions": exc.errors}) from None


def _store_questions(survey: Survey, specs: Sequence[schemes.QuestionSpec]) -> None:
    Question.objects.bulk_create(
        [
            Question(
                survey=survey,
                key=spec.key,
                text=spec.text,
                type=spec.type,
                required=spec.required,
                categories=list(spec.categories),
                n_categories=spec.n_categories,
                range_low=spec.range[0] if spec.range else None,
                range_high=spec.range[1] if spec.range else None,
                step=spec.step,
                resolution=spec.resolution,
                mechanism=spec.mechanism,
                mechanism_params=spec.params,
                translations=spec.translations,
                reuse=spec.reuse,
                position=position,
            )
            for position, spec in enumerate(specs)
        ]
    )


@transaction.atomic
def survey_create(
    *,
    organisation: Organisation,
    consultation: Consultation,
    kind: str,
    title: str,
    questions: list[dict[str, Any]],
    actor: str = "system",
    retention_days: int | None = None,
) -> Survey:
    """Create a draft survey with its questions, in one transaction.

    ``questions`` are dicts as the API receives them (``key``, ``text``, ``type``,
    ``categories`` or ``range``, ``mechanism`` = ``{"name": ..., **params}``, optional
    ``required``). Every mechanism is validated by :mod:`privacy.mechanisms`.
    """
    if consultation.organisation_id != organisation.pk:
        raise NotFound(_("Consultation not found."), {"consultation": [_("Not found.")]})
    if kind not in Survey.Kind.values:
        raise InvalidInput(
            _("kind must be profile or opinion, got %(kind)s.") % {"kind": repr(kind)},
            {"kind": [_("Invalid.")]},
        )
    if not isinstance(title, str) or not 1 <= len(title) <= 200:
        raise InvalidInput(
            _("title must be 1-200 characters."), {"title": [_("1-200 characters.")]}
        )
    specs = _parse_questions(questions, organisation)
    retention_days = _retention_days(retention_days)
    specs = privacy_budget.resolve_reuse(consultation=consultation, specs=specs)
    if kind == Survey.Kind.PROFILE and _has_profile(consultation):
        raise _second_profile()
    try:
        with transaction.atomic():
            survey = Survey.objects.create(
                consultation=consultation, kind=kind, title=title, retention_days=retention_days
            )
    except IntegrityError:  # a concurrent request created the profile survey first
        raise _second_profile() from None
    _store_questions(survey, specs)
    audit_record(
        organisation=organisation,
        actor=actor,
        action="survey.create",
        target=str(survey.pk),
        details={"kind": kind, "questions": [s.key for s in specs]},
    )
    return survey


def _retention_days(value: Any) -> int | None:
    """``retention_days``: a whole number of days >= 1 (at most 100 years), or None."""
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or not 1 <= value <= MAX_RETENTION_DAYS
    ):
        problem = _("Must be a whole number of days from 1 to %(most)s, or null.") % {
            "most": MAX_RETENTION_DAYS
        }
        raise InvalidInput(
            _("retention_days: %(problem)s") % {"problem": problem}, {"retention_days": [problem]}
        )
    return int(value)


def _second_profile() -> InvalidInput:
    return InvalidInput(
        _("This consultation already has a profile survey."),
        {"kind": [_("This consultation already has a profile survey (at most one).")]},
    )


def _has_profile(consultation: Consultation) -> bool:
    return Survey.objects.filter(consultation=consultation, kind=Survey.Kind.PROFILE).exists()


def _frozen(survey: Survey) -> InvalidInput:
    return InvalidInput(
        _(
            "Survey %(survey)s is %(status)s: questions and mechanisms are frozen once a "
            "survey opens."
        )
        % {"survey": survey.pk, "status": survey.status},
        {"questions": [_("Frozen once the survey opens.")]},
    )


@transaction.atomic
def survey_update(
    *,
    survey: Survey,
    title: str | None = None,
    questions: list[dict[str, Any]] | None = None,
    actor: str = "system",
    retention_days: Any = UNCHANGED,
) -> Survey:
    """Rename a survey, set its retention period, or replace the questions of a draft one."""
    survey = Survey.objects.select_for_update().get(pk=survey.pk)
    changed = []
    if retention_days is not UNCHANGED:
        retention_days = _retention_days(retention_days)
        if retention_days != survey.retention_days:
            survey.retention_days = retention_days
            survey.save(update_fields=["retention_days"])
            changed.append("retention_days")
    if title is not None and title != survey.title:
        if not isinstance(title, str) or not 1 <= len(title) <= 200:
            raise InvalidInput(
                _("title must be 1-200 characters."), {"title": [_("1-200 characters.")]}
            )
        survey.title = title
        survey.save(update_fields=["title"])
        changed.append("title")
    if questions is not None:
        if survey.status != Survey.Status.DRAFT:
            raise _frozen(survey)
        specs = _parse_questions(questions, survey.consultation.organisation)
        specs = privacy_budget.resolve_reuse(
            consultation=survey.consultation, specs=specs, survey_pk=survey.pk
        )
        CalibrationPair.objects.filter(question__survey=survey).delete()
        survey.questions.all().delete()
        _store_questions(survey, specs)
        changed.append("questions")
    if changed:
        audit_record(
            organisation=survey.consultation.organisation,
            actor=actor,
            action="survey.update",
            target=str(survey.pk),
            details={"fields": changed},
        )
    return survey


@transaction.atomic
def survey_delete(*, survey: Survey, actor: str = "system") -> None:
    """Delete a draft survey (an opened one holds responses: close it instead)."""
    survey = Survey.objects.select_for_update().get(pk=survey.pk)
    if survey.status != Survey.Status.DRAFT:
        raise Conflict(
            _("Survey %(survey)s is %(status)s; only draft surveys can be deleted.")
            % {"survey": survey.pk, "status": survey.status},
            {"status": [_("Is %(status)s.") % {"status": survey.status}]},
        )
    organisation = survey.consultation.organisation
    pk = survey.pk
    survey.delete()
    audit_record(organisation=organisation, actor=actor, action="survey.delete", target=str(pk))


@transaction.atomic
def survey_open(*, survey: Survey, actor: str = "system") -> Survey:
    """Open a draft survey for responses; its questions are frozen from now on."""
    survey = Survey.objects.select_for_update().select_related("consultation").get(pk=survey.pk)
    if survey.status != Survey.Status.DRAFT:
        raise Conflict(
            _("Survey %(survey)s is %(status)s; only a draft survey can be opened.")
            % {"survey": survey.pk, "status": survey.status},
            {"status": [_("Is %(status)s.") % {"status": survey.status}]},
        )
    if not survey.questions.exists():
        raise InvalidInput(
            _("A survey needs at least one question to open."), {"questions": [_("Empty.")]}
        )
    # Locked as a budget change locks it (consultations.services.privacy_budget_problem):
    # the budget read here stays the consultation's while this survey opens.
    survey.consultation = Consultation.objects.select_for_update(no_key=True).get(
        pk=survey.consultation_id
    )
    privacy_budget.open_problems(survey, list(survey.questions.order_by("position")))
    survey.status = Survey.Status.OPEN
    survey.opened_at = timezone.now()
    survey.save(update_fields=["status", "opened_at"])
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="survey.open",
        target=str(survey.pk),
    )
    return survey


@transaction.atomic
def survey_close(*, survey: Survey, actor: str = "system") -> Survey:
    """Close an open survey: no more responses (withdrawals stay possible)."""
    survey = Survey.objects.select_for_update().select_related("consultation").get(pk=survey.pk)
    if survey.status != Survey.Status.OPEN:
        raise Conflict(
            _("Survey %(survey)s is %(status)s; only an open survey can be closed.")
            % {"survey": survey.pk, "status": survey.status},
            {"status": [_("Is %(status)s.") % {"status": survey.status}]},
        )
    survey.status = Survey.Status.CLOSED
    survey.closed_at = timezone.now()
    survey.save(update_fields=["status", "closed_at"])
    transaction.on_commit(_statistics_survey_closed)
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="survey.close",
        target=str(survey.pk),
    )
    return survey


# --------------------------------------------------------------------------- statistics tables


def statistics_tables_ingested(*, answers: int) -> None:
    """After a bulk ingest commits: queue the statistics tables' vacuum once enough answers
    have come (debounced until the submissions pause; :mod:`surveys.maintenance`).

    The bulk API calls it; so should any loader that stores answers another way (a
    ``COPY`` import, as ``bench/bench_scale.py`` does beyond the API's share).
    """
    if maintenance.answers_ingested(answers):
        _queue_vacuum(countdown=maintenance.quiet_seconds())


def _statistics_survey_closed() -> None:
    if maintenance.survey_closed():
        _queue_vacuum(countdown=0)


def _queue_vacuum(*, countdown: float) -> None:
    if statistics_tables_vacuum.app.conf.task_always_eager:
        # No worker (the embedded default): autovacuum's settings (migration 0013) cover
        # it rather than one submitter's request waiting for a vacuum.
        maintenance.vacuum_not_queued()
        return
    statistics_tables_vacuum.apply_async(kwargs={"queued_at": time.time()}, countdown=countdown)


# --------------------------------------------------------------------------- responses


def _validate(survey: Survey, items: Sequence[Any]) -> Batch:
    form = survey_answer_form(survey)
    errors: dict[str, Any] = {}
    participants: list[str] = []
    index_col: list[int] = []
    answer_rows: list[answers.AnswerRow] = []
    first_seen: dict[str, int] = {}
    duplicates: dict[str, Any] = {}
    check = answers.check_response
    for index, item in enumerate(items):
        participant, rows, item_errors = check(item, form)
        if item_errors:
            errors[str(index)] = item_errors
            continue
        assert participant is not None
        if participant in first_seen:
            duplicates[str(index)] = {
                "participant": [
                    _(
                        "Participant %(participant)s appears twice in this batch "
                        "(also item %(item)s)."
                    )
                    % {"participant": repr(participant), "item": first_seen[participant]}
                ]
            }
            continue
        first_seen[participant] = index
        index_col += [len(participants)] * len(rows)
        participants.append(participant)
        answer_rows += rows
    if errors:
        count = len(errors)
        raise InvalidInput(
            ngettext(
                "%(count)s of %(total)s responses is invalid; nothing was stored.",
                "%(count)s of %(total)s responses are invalid; nothing was stored.",
                count,
            )
            % {"count": count, "total": len(items)}
            if len(items) != 1
            else _("1 of 1 response is invalid; nothing was stored."),
            {"responses": errors},
        )
    if duplicates:
        raise Conflict(
            _("%(count)s response(s) repeat a participant of the same batch; nothing was stored.")
            % {"count": len(duplicates)},
            {"responses": duplicates},
        )
    # One row per answer -> one list per column (zip(*rows) transposes in C).
    columns = [list(column) for column in zip(*answer_rows, strict=True)] or [[], [], [], []]
    question_col, code_col, value_col, n_col = columns
    return Batch(
        participants,
        index_col,
        question_col,
        code_col,
        value_col,
        n_col,
        new_withdrawal_tokens(len(participants)),
    )


def response_submit(
    *, survey: Survey, participant: str, answers: dict[str, Any], actor: str = "system"
) -> str:
    """Store one participant's distorted answers; returns their withdrawal token.

    The token is returned here once and stored only as a hash: the participant (their
    client library keeps it beside the memoised answers) needs it to withdraw.

    Raises
    ------
    InvalidInput
        Survey not open, bad participant reference, unknown key, missing required
        answer, unknown category, wrong type, or a value the mechanism could not produce.
    Conflict
        The participant already answered (or withdrew from) this survey.
    """
    del actor  # single submissions are not audited one by one (the key is throttled)
    require_open(survey)
    try:
        batch = _validate(survey, [{"participant": participant, "answers": answers}])
    except InvalidInput as exc:
        item = exc.errors["responses"]["0"]
        raise InvalidInput(_first_problem(item), item) from None
    store(survey, batch, single=True)
    return batch.withdrawal_tokens[0]


def _first_problem(item: dict[str, Any]) -> str:
    field, problem = next(iter(item.items()))
    while isinstance(problem, dict):
        field, problem = next(iter(problem.items()))
    return f"{field}: {problem[0]}" if field != "non_field_errors" else problem[0]


def responses_submit_bulk(
    *, survey: Survey, responses: list[Any], actor: str = "system"
) -> list[str]:
    """Store up to 10,000 responses atomically; returns their withdrawal tokens, in order.

    One bad item rejects the batch: :class:`InvalidInput` names every bad item by index;
    repeated participants in the batch and participants who already answered give a
    :class:`Conflict` naming them. Nothing is stored in either case.
    """
    require_open(survey)
    if not isinstance(responses, list) or not 1 <= len(responses) <= MAX_BULK:
        raise InvalidInput(
            _("responses must be a list of 1 to %(limit)s responses.") % {"limit": MAX_BULK},
            {"responses": [_("Must be a list of 1 to %(limit)s responses.") % {"limit": MAX_BULK}]},
        )
    batch = _validate(survey, responses)
    store(survey, batch, single=False)
    transaction.on_commit(lambda: statistics_tables_ingested(answers=len(batch.answer_question)))
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="responses.bulk_submit",
        target=str(survey.pk),
        details={"created": len(batch.participants)},
    )
    return batch.withdrawal_tokens


@transaction.atomic
def response_withdraw(*, survey: Survey, participant: str, actor: str = "system") -> Response:
    """Withdraw a participant's response: delete its answers, keep a tombstone.

    For organisers (the admin's action); participants go through
    :func:`response_withdraw_with_token`.

    Later analyses no longer see it, and the participant cannot answer again. Withdrawing
    twice is harmless.

    Raises
    ------
    NotFound
        The participant never answered this survey.
    """
    response = (
        Response.objects.select_for_update()
        .filter(
            survey=survey,
            participant__consultation_id=survey.consultation_id,
            participant__reference=participant,
        )
        .first()
    )
    if response is None:
        raise NotFound(
            _("No response of participant %(participant)s to survey %(survey)s.")
            % {"participant": repr(participant), "survey": survey.pk},
            {"participant": [_("No response from this participant.")]},
        )
    if response.withdrawn_at is None:
        tallies.withdraw(response)  # same transaction as the deletion
        response.answers.all().delete()
        response.withdrawn_at = this_hour()
        response.save(update_fields=["withdrawn_at"])
        audit_record(
            organisation=survey.consultation.organisation,
            actor=actor,
            action="response.withdraw",
            target=str(survey.pk),
        )
    return response


NO_SUCH_WITHDRAWAL = gettext_lazy(
    "No response to withdraw for this participant and withdrawal token."
)


@transaction.atomic
def response_withdraw_with_token(
    *, survey: Survey, participant: Any, withdrawal_token: str, actor: str = "system"
) -> Response:
    """A participant withdraws their response, proving it with their withdrawal token.

    A wrong token and a reference that never answered get the same :class:`NotFound`, so
    the answer does not tell whether a reference exists. Withdrawing twice is harmless.
    """
    response = None
    if isinstance(participant, str) and schemes.PARTICIPANT_PATTERN.fullmatch(participant):
        response = (
            Response.objects.select_for_update()
            .filter(
                survey=survey,
                participant__consultation_id=survey.consultation_id,
                participant__reference=participant,
            )
            .first()
        )
    expected = response.withdrawal_token_hash if response is not None else ""
    given = withdrawal_token_hash(withdrawal_token)
    if response is None or not expected or not hmac.compare_digest(expected, given):
        raise NotFound(NO_SUCH_WITHDRAWAL, {"withdrawal_token": [NO_SUCH_WITHDRAWAL]})
    return response_withdraw(survey=survey, participant=response.participant.reference, actor=actor)


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class CalibrationUpload:
    question: str
    added: int
    total: int


@transaction.atomic
def calibration_upload(
    *, survey: Survey, question: str, pairs: list[Any], actor: str = "system"
) -> CalibrationUpload:
    """Add (true, negative) label pairs of a calibration sample to a negative_manual question.

    They estimate the rows of the question's channel (000_1b7f9a8e281301b4.txt, Section
    4.1); rows without pairs stay uniform. Allowed while the survey is draft or open.
    """
    if survey.status == Survey.Status.CLOSED:
        raise InvalidInput(
            _("Survey %(survey)s is closed; calibration data can no longer change.")
            % {"survey": survey.pk},
            {"survey": [_("Is closed.")]},
        )
    target = (
        Question.objects.filter(survey=survey, key=question).first()
        if isinstance(question, str)
        else None
    )
    if target is None:
        raise InvalidInput(
            _("Survey %(survey)s has no question %(question)s.")
            % {"survey": survey.pk, "question": repr(question)},
            {"question": [_("Unknown question %(question)s.") % {"question": repr(question)}]},
        )
    if target.mechanism != "negative_manual":
        raise InvalidInput(
            _(
                "Question %(question)s uses %(mechanism)s; calibration pairs are only for "
                "negative_manual questions."
            )
            % {"question": repr(question), "mechanism": target.mechanism},
            {"question": [_("Not a negative_manual question.")]},
        )
    if not isinstance(pairs, list) or not 1 <= len(pairs) <= MAX_CALIBRATION_PAIRS:
        raise InvalidInput(
            _("pairs must be a list of 1 to %(limit)s [true, negative] pairs.")
            % {"limit": MAX_CALIBRATION_PAIRS},
            {
                "pairs": [
                    _("Must be a list of 1 to %(limit)s pairs.") % {"limit": MAX_CALIBRATION_PAIRS}
                ]
            },
        )
    codes = {label: code for code, label in enumerate(target.categories)}
    errors: dict[str, list[str]] = {}
    rows: list[tuple[int, int]] = []
    for index, pair in enumerate(pairs):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not all(isinstance(x, str) for x in pair)
        ):
            errors[str(index)] = [_("Must be [true label, negative label].")]
            continue
        unknown = [label for label in pair if label not in codes]
        if unknown:
            errors[str(index)] = [
                ngettext(
                    "Unknown category %(unknown)s; the question's are %(categories)s.",
                    "Unknown categories %(unknown)s; the question's are %(categories)s.",
                    len(unknown),
                )
                % {"unknown": unknown, "categories": target.categories}
            ]
            continue
        if pair[0] == pair[1]:
            errors[str(index)] = [_("The negative answer must differ from the true one.")]
            continue
        rows.append((codes[pair[0]], codes[pair[1]]))
    if errors:
        raise InvalidInput(
            _("%(count)s of %(total)s calibration pairs are invalid; nothing was stored.")
            % {"count": len(errors), "total": len(pairs)},
            {"pairs": errors},
        )
    uploaded_at = this_hour()
    CalibrationPair.objects.bulk_create(
        [
            CalibrationPair(
                question=target,
                true_code=t,
                negative_code=n,
                n_categories=target.n_categories,
                uploaded_at=uploaded_at,
            )
            for t, n in rows
        ],
        batch_size=1000,
    )
    total = CalibrationPair.objects.filter(question=target).count()
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="calibration.upload",
        target=f"{survey.pk}/{target.key}",
        details={"added": len(rows), "total": total},
    )
    return CalibrationUpload(question=target.key, added=len(rows), total=total)
