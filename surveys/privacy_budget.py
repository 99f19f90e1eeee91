"""Each resident's privacy budget across a consultation's surveys (issue 28).

Local differential privacy composes: a resident who answers five surveys at ε = 1.7 has
given away ε = 8.5 (sequential composition). A consultation may cap that with
``privacy_budget``; then

* every survey's ``epsilon_total`` (:func:`surveys.schemes.epsilon_total`) must fit the
  budget alone, and no sensitive question may have unbounded ε (:func:`open_problems`);
* every submission charges each participant the ε of the reports it stores, in the same
  transaction as the answers (:func:`settle`): one ``INSERT ... ON CONFLICT DO UPDATE
  SET spent = spent + ...`` per batch on the ledger (:class:`surveys.models.PrivacyLedger`,
  one row per resident), which locks each resident's row until commit, so two
  submissions for one resident are serialised and the second sees what the first spent;
  a batch that would take anyone past the budget is refused whole (409
  ``privacy_budget``) and nothing is stored.

A question may ask again an earlier question of the consultation (``reuse``): the client
re-sends the report it memoised then (RAPPOR's permanent randomisation), the server
checks it is the same report (409 otherwise) and charges nothing, since nothing new is
revealed. A participant with no earlier report (they skipped that survey or withdrew)
sends a fresh one, which is charged its ε.

Without a budget and without ``reuse`` questions nothing here runs on the submission
path (:func:`guarded` reads only cached values).
"""

from __future__ import annotations

import hashlib
import hmac
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from django.db import connection
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from consultations.models import Consultation
from core.errors import Conflict, InvalidInput, NotFound
from surveys import schemes
from surveys.models import Answer, PrivacyLedger, Question, Response, Survey


class Batch(Protocol):
    """What this module reads of :class:`surveys.ingest.Batch` (which imports it)."""

    participants: list[str]
    answer_response_index: list[int]
    answer_question: list[int]
    answer_code: list[int | None]
    answer_value: list[float | None]


# Spent and budget are sums of doubles: a resident exactly at the budget must pass.
TOLERANCE = 1e-9
BUDGET_CODE = "privacy_budget"
REUSE_CODE = "reused_report_differs"


# --------------------------------------------------------------------------- definitions


def _same_question(earlier: Question, spec: schemes.QuestionSpec) -> str | None:
    """Why ``spec`` cannot ask ``earlier`` again (``None`` if it can)."""
    if earlier.type != spec.type:
        return _("it is a %(type)s question, this one %(other)s.") % {
            "type": earlier.type,
            "other": spec.type,
        }
    if list(earlier.categories or []) != list(spec.categories):
        return _("its categories are %(categories)s, this one's %(other)s.") % {
            "categories": list(earlier.categories or []),
            "other": list(spec.categories),
        }
    if earlier.mechanism != spec.mechanism or dict(earlier.mechanism_params or {}) != spec.params:
        return _("its mechanism is %(mechanism)s, this one's %(other)s.") % {
            "mechanism": schemes.mechanism_json(earlier.mechanism, earlier.mechanism_params),
            "other": schemes.mechanism_json(spec.mechanism, spec.params),
        }
    if spec.type not in schemes.DISCRETE_TYPES:
        mine = (spec.range, spec.resolution)
        theirs = ((earlier.range_low, earlier.range_high), earlier.resolution)
        if mine != theirs:
            return _("its range and reporting grid differ from this one's.")
    return None


def resolve_reuse(
    *,
    consultation: Consultation,
    specs: Sequence[schemes.QuestionSpec],
    survey_pk: int | None = None,
) -> list[schemes.QuestionSpec]:
    """Check every ``reuse`` of a survey's questions and point it at the first asking.

    The earlier question must belong to another, earlier survey of the same consultation
    and have the same type, categories, mechanism (and range and grid). A reuse of a
    question that itself reuses one points at that first question, whose report the
    client memoised.

    Raises
    ------
    InvalidInput
        Naming each offending question by index (``questions[i].reuse``).
    """
    wanted = [spec.reuse for spec in specs if spec.reuse]
    if not wanted:
        return list(specs)
    surveys = {
        s.pk: s
        for s in Survey.objects.filter(
            consultation=consultation, pk__in={r["survey"] for r in wanted}
        )
    }
    questions = {
        (q.survey_id, q.key): q
        for q in Question.objects.filter(
            survey_id__in=list(surveys), key__in={r["question"] for r in wanted}
        )
    }
    errors: list[dict[str, list[str]]] = [{} for _spec in specs]
    resolved: list[schemes.QuestionSpec] = []
    for index, spec in enumerate(specs):
        if not spec.reuse:
            resolved.append(spec)
            continue
        survey_id, key = spec.reuse["survey"], spec.reuse["question"]
        earlier_survey = surveys.get(survey_id)
        problem = None
        if earlier_survey is None:
            problem = _(
                "Survey %(survey)s is not a survey of this consultation: only a question of "
                "the same consultation can be asked again."
            ) % {"survey": survey_id}
        elif survey_pk is not None and survey_id >= survey_pk:
            problem = _(
                "Survey %(survey)s is not earlier than this one: only an earlier survey's "
                "question can be asked again."
            ) % {"survey": survey_id}
        else:
            earlier = questions.get((survey_id, key))
            if earlier is None:
                problem = _("Survey %(survey)s has no question %(key)s.") % {
                    "survey": survey_id,
                    "key": repr(key),
                }
            else:
                why = _same_question(earlier, spec)
                if why:
                    problem = _(
                        "Question %(key)s of survey %(survey)s cannot be asked again here: "
                        "%(why)s An answer kept from before must be to the same question "
                        "under the same mechanism."
                    ) % {"key": repr(key), "survey": survey_id, "why": why}
                else:
                    root = earlier.reuse or {"survey": survey_id, "question": key}
                    spec = schemes.QuestionSpec(**{**spec.__dict__, "reuse": dict(root)})
        if problem:
            errors[index] = {"reuse": [problem]}
        resolved.append(spec)
    bad = [i for i, e in enumerate(errors) if e]
    if bad:
        raise InvalidInput(
            ngettext("Invalid question %(items)s.", "Invalid questions %(items)s.", len(bad))
            % {"items": ", ".join(map(str, bad))},
            {"questions": errors},
        )
    return resolved


# --------------------------------------------------------------------------- opening


def open_problems(survey: Survey, questions: Sequence[Question]) -> None:
    """Refuse to open a survey that its consultation's budget cannot hold.

    Raises
    ------
    InvalidInput
        A ``reuse`` whose earlier question is gone; in a consultation with a budget, a
        sensitive question with unbounded ε (naming it and why), or an ``epsilon_total``
        above the budget.
    """
    for question in questions:
        reuse = question.reuse
        if (
            reuse
            and not Question.objects.filter(
                survey__consultation_id=survey.consultation_id,
                survey_id=reuse["survey"],
                key=reuse["question"],
            ).exists()
        ):
            message = _(
                "Question %(key)s asks again question %(earlier)s of survey %(survey)s, "
                "which no longer exists."
            ) % {"key": repr(question.key), "earlier": repr(reuse["question"]),
                 "survey": reuse["survey"]}  # fmt: skip
            raise InvalidInput(message, {"questions": {question.key: [message]}})
    budget = survey.consultation.privacy_budget
    if budget is None:
        return
    unbounded = [q.key for q in questions if not q.reuse and schemes.question_cost(q) is None]
    if unbounded:
        message = ngettext(
            "Question %(keys)s has no bounded privacy loss (ε), so it cannot be asked in a "
            "consultation with a privacy budget: every answer to it could reveal the "
            "resident's true answer with certainty (negative surveys), or the noise has "
            "no pure ε (Gaussian or uniform noise, noise off a reporting grid). Use "
            "randomised response, Laplace or staircase noise or retention replacement on a "
            "grid, or mechanism none if the question is not sensitive.",
            "Questions %(keys)s have no bounded privacy loss (ε), so they cannot be asked "
            "in a consultation with a privacy budget: every answer to them could reveal "
            "the resident's true answer with certainty (negative surveys), or the noise "
            "has no pure ε (Gaussian or uniform noise, noise off a reporting grid). Use "
            "randomised response, Laplace or staircase noise or retention replacement on a "
            "grid, or mechanism none if the question is not sensitive.",
            len(unbounded),
        ) % {"keys": ", ".join(map(repr, unbounded))}
        raise InvalidInput(message, {"questions": {key: [message] for key in unbounded}})
    total = schemes.epsilon_total(questions) or 0.0
    if total > budget * (1 + TOLERANCE):
        message = _(
            "This survey alone needs ε %(total)s per resident (epsilon_total), more than the "
            "consultation's privacy budget of %(budget)s: lower its questions' ε or raise "
            "the budget."
        ) % {"total": f"{total:.4g}", "budget": f"{budget:g}"}
        raise InvalidInput(message, {"privacy_budget": [message]})


# --------------------------------------------------------------------------- submissions


@dataclass(frozen=True)
class SurveyCosts:
    """What each report of an open survey costs, and which questions ask again."""

    # question id -> ε charged for a report (math.inf where unbounded)
    cost: dict[int, float]
    # question id -> (survey id, question id) of the earlier question it asks again
    reuse: dict[int, tuple[int, int]]


_COSTS: dict[tuple[int, Any], SurveyCosts] = {}
_COSTS_LIMIT = 512


def survey_costs(survey: Survey) -> SurveyCosts:
    """The survey's per-question costs, cached per process once it opened (frozen)."""
    cache_key = (survey.pk, survey.opened_at)
    found = _COSTS.get(cache_key) if survey.opened_at is not None else None
    if found is not None:
        return found
    questions = list(Question.objects.filter(survey=survey).order_by("position"))
    cost = {}
    for question in questions:
        value = schemes.question_cost(question)
        cost[question.pk] = math.inf if value is None else value
    roots = {}
    reusing = [q for q in questions if q.reuse]
    if reusing:
        earlier = {
            (q.survey_id, q.key): q.pk
            for q in Question.objects.filter(
                survey__consultation_id=survey.consultation_id,
                survey_id__in={q.reuse["survey"] for q in reusing},
            )
        }
        for question in reusing:
            root = earlier.get((question.reuse["survey"], question.reuse["question"]))
            if root is not None:
                roots[question.pk] = (int(question.reuse["survey"]), root)
    found = SurveyCosts(cost=cost, reuse=roots)
    if survey.opened_at is not None:
        if len(_COSTS) >= _COSTS_LIMIT:
            _COSTS.clear()
        _COSTS[cache_key] = found
    return found


def guarded(survey: Survey) -> bool:
    """Whether a submission to this survey needs :func:`settle` (a budget is set, or a
    question asks again). Reads only what the submission path has cached.

    The consultation's budget as cached with the open survey can only be stale by having
    been raised or removed (a budget cannot be set or lowered once a survey opened,
    consultations.services.privacy_budget_problem), so a cached ``None`` is current;
    :func:`settle` reads the live value.
    """
    return survey.consultation.privacy_budget is not None or bool(survey_costs(survey).reuse)


def _earlier_reports(
    consultation_id: int, references: Sequence[str], question_ids: Sequence[int]
) -> dict[tuple[str, int], tuple[int | None, float | None]]:
    """(reference, question id) -> (code, value) of the participants' stored reports."""
    rows = Answer.objects.filter(
        question_id__in=list(question_ids),
        response__participant__consultation_id=consultation_id,
        response__participant__reference__in=list(references),
        response__withdrawn_at__isnull=True,
    ).values_list("response__participant__reference", "question_id", "code", "value")
    return {(ref, qid): (code, value) for ref, qid, code, value in rows}


def _answer_costs(survey: Survey, batch: Batch, costs: SurveyCosts) -> np.ndarray:
    """ε charged for each answer of the batch; a reused report that differs from the
    stored one is a :class:`Conflict` naming the items."""
    charged = np.fromiter(
        (costs.cost.get(q, math.inf) for q in batch.answer_question),
        dtype=np.float64,
        count=len(batch.answer_question),
    )
    if not costs.reuse:
        return charged
    positions = [i for i, q in enumerate(batch.answer_question) if q in costs.reuse]
    if not positions:
        return charged
    references = sorted({batch.participants[batch.answer_response_index[i]] for i in positions})
    earlier = _earlier_reports(
        survey.consultation_id, references, sorted({costs.reuse[q][1] for q in costs.reuse})
    )
    keys = dict(Question.objects.filter(pk__in=list(costs.reuse)).values_list("pk", "key"))
    differs: dict[str, dict[str, list[str]]] = {}
    for i in positions:
        question_id = batch.answer_question[i]
        survey_id, root = costs.reuse[question_id]
        item = batch.answer_response_index[i]
        stored = earlier.get((batch.participants[item], root))
        if stored is None:
            continue  # no earlier report (skipped, withdrawn): a fresh one, charged
        sent = (batch.answer_code[i], batch.answer_value[i])
        if sent == stored:
            charged[i] = 0.0
            continue
        key = keys.get(question_id, str(question_id))
        differs.setdefault(str(item), {"answers": {}})["answers"][key] = [
            _(
                "This question asks again a question of survey %(survey)s: send the report "
                "sent then (the client kit keeps it), not a new one."
            )
            % {"survey": survey_id}
        ]
    if differs:
        if len(batch.participants) == 1:
            (item,) = differs.values()
            detail = next(iter(item["answers"].values()))[0]
            raise Conflict(detail, item, code=REUSE_CODE)
        raise Conflict(
            ngettext(
                "%(count)s response re-sends a kept answer that differs from the one sent "
                "before; nothing was stored.",
                "%(count)s responses re-send a kept answer that differs from the one sent "
                "before; nothing was stored.",
                len(differs),
            )
            % {"count": len(differs)},
            {"responses": differs},
            code=REUSE_CODE,
        )
    return charged


_PG_CHARGE = (
    "INSERT INTO {table} (consultation_id, reference, spent) "
    "SELECT %s, x.reference, x.spent "
    "FROM unnest(%s::varchar[], %s::double precision[]) AS x(reference, spent) "
    # One order for every writer: two batches sharing residents lock them alike.
    "ORDER BY x.reference "
    "ON CONFLICT (consultation_id, reference) "
    "DO UPDATE SET spent = {table}.spent + EXCLUDED.spent "
    "RETURNING reference, spent"
)
_SQLITE_CHARGE = (
    "INSERT INTO {table} (consultation_id, reference, spent) VALUES {rows} "
    "ON CONFLICT (consultation_id, reference) DO UPDATE SET spent = spent + excluded.spent "
    "RETURNING reference, spent"
)


def _charge(consultation_id: int, references: list[str], amounts: list[float]) -> dict[str, float]:
    """Add ``amounts`` to the residents' ledger rows (created at 0); their new totals.

    One statement per batch on PostgreSQL; the row locks it takes last until commit.
    """
    table = connection.ops.quote_name(PrivacyLedger._meta.db_table)
    totals: dict[str, float] = {}
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_PG_CHARGE.format(table=table), [consultation_id, references, amounts])
            totals.update(cursor.fetchall())
            return totals
        for start in range(0, len(references), 300):
            chunk = list(
                zip(references[start : start + 300], amounts[start : start + 300], strict=True)
            )
            cursor.execute(
                _SQLITE_CHARGE.format(table=table, rows=", ".join(["(%s, %s, %s)"] * len(chunk))),
                [value for ref, amount in chunk for value in (consultation_id, ref, amount)],
            )
            totals.update(cursor.fetchall())
    return totals


def _over_budget(batch: Batch, over: set[str]) -> Conflict:
    why = _(
        "This response would take the participant past the consultation's privacy budget: "
        "the surveys they answered already used it up. Nothing was stored."
    )
    if len(batch.participants) == 1:
        return Conflict(why, {"participant": [why]}, code=BUDGET_CODE)
    items = {
        str(index): {"participant": [why]}
        for index, ref in enumerate(batch.participants)
        if ref in over
    }
    return Conflict(
        ngettext(
            "%(count)s response would take its participant past the consultation's privacy "
            "budget; nothing was stored.",
            "%(count)s responses would take their participants past the consultation's "
            "privacy budget; nothing was stored.",
            len(items),
        )
        % {"count": len(items)},
        {"responses": items},
        code=BUDGET_CODE,
    )


def settle(survey: Survey, batch: Batch) -> None:
    """Check reused reports and charge the batch's ε, inside the submission's transaction.

    Raises
    ------
    Conflict
        A reused report differs from the stored one (code ``reused_report_differs``), or
        a participant would go past the budget (code ``privacy_budget``); the caller's
        transaction rolls back, so nothing is stored and nothing is charged.
    """
    costs = survey_costs(survey)
    charged = _answer_costs(survey, batch, costs)
    budget = (
        Consultation.objects.filter(pk=survey.consultation_id)
        .values_list("privacy_budget", flat=True)
        .first()
    )
    if budget is None:
        return
    per_item = np.bincount(
        np.asarray(batch.answer_response_index, dtype=np.intp),
        weights=charged,
        minlength=len(batch.participants),
    )
    limit = budget * (1 + TOLERANCE)
    # Charged first, then checked: the refusal names every response that would go past
    # the budget, whether on its own or with what its participant spent before (the
    # caller's transaction rolls the charge back).
    paying = np.flatnonzero(per_item > 0)
    if len(paying) == 0:
        return
    totals = _charge(
        survey.consultation_id,
        [batch.participants[i] for i in paying],
        [float(per_item[i]) for i in paying],
    )
    over = {ref for ref, spent in totals.items() if spent > limit}
    if over:
        raise _over_budget(batch, over)


# --------------------------------------------------------------------------- the resident's view


NO_SUCH_PARTICIPANT = gettext_lazy("No participant with this reference and withdrawal token.")


@dataclass(frozen=True)
class Budget:
    """What a resident sees: the budget, what they spent, what remains (ε)."""

    budget: float | None
    spent: float | None
    remaining: float | None


def participant_budget(*, survey: Survey, participant: Any, withdrawal_token: Any) -> Budget:
    """A resident's budget in the survey's consultation, proven by any of their
    withdrawal tokens there. A wrong token and an unknown reference get the same
    :class:`NotFound`. Without a budget no ledger is kept: ``spent`` is then ``None``."""
    hashes: list[str] = []
    if isinstance(participant, str) and schemes.PARTICIPANT_PATTERN.fullmatch(participant):
        hashes = list(
            Response.objects.filter(
                participant__consultation_id=survey.consultation_id,
                participant__reference=participant,
            ).values_list("withdrawal_token_hash", flat=True)
        )
    token = withdrawal_token if isinstance(withdrawal_token, str) else ""
    # As surveys.ingest.withdrawal_token_hash stores it (which imports this module).
    given = hashlib.sha256(token.encode()).hexdigest()
    proven = False
    for expected in hashes or [""]:  # compare once even when nothing is stored
        if expected and hmac.compare_digest(expected, given):
            proven = True
    if not proven:
        raise NotFound(str(NO_SUCH_PARTICIPANT), {"withdrawal_token": [str(NO_SUCH_PARTICIPANT)]})
    budget = (
        Consultation.objects.filter(pk=survey.consultation_id)
        .values_list("privacy_budget", flat=True)
        .first()
    )
    if budget is None:
        return Budget(None, None, None)
    spent = (
        PrivacyLedger.objects.filter(consultation_id=survey.consultation_id, reference=participant)
        .values_list("spent", flat=True)
        .first()
    ) or 0.0
    return Budget(budget, spent, max(0.0, budget - spent))
