"""Researcher export: a survey's distorted answers as one zip, streamed in bounded memory.

The zip holds ``data.csv`` or ``data.parquet`` (one row per live response), ``scheme.json``
(the published scheme with every discrete question's channel, ε and mechanism
parameters, so that others can reconstruct with their own tools) and ``README.txt``.

Privacy (issue 28, item 5):

- **Fresh identifiers.** The ``participant`` column is 128 random bits per row, drawn from
  the operating system for this export only, and the rows come in a random order (a
  permutation drawn for this export), so neither the identifiers nor the row order link
  two exports (of two surveys of one consultation, or of one survey twice) to each other
  or to the portal's references.
- **Exact attributes** (``mechanism: none``: true answers, a register) are left out unless
  asked for by key; then only from a closed survey (its cells no longer grow, so two
  exports cannot be differenced), and only when every combination of the exported exact
  answers that occurs is shared by at least the consultation's ``min_cell`` participants;
  otherwise a 400 naming the rule, never the small number. The exact attributes of earlier
  exports of the survey count as exported together with the new ones: the rows of two
  exports link on the distorted answers they share (issue 26). Every published count,
  cell and total over exact attributes is perturbed by the cell key, so the export's
  exact margins minus published results leave an unknown of up to 2 per result used.
- Every export is an audit event ``survey.export``.

Memory: the live response ids (8 bytes each) are read and permuted at once; the answers
are then read, converted and written :data:`CHUNK` responses at a time, so 10^6 rows never
sit in memory as Python objects. The zip is written to a non-seekable stream (data
descriptors, ZIP64), each write handed on as it is made.
"""

from __future__ import annotations

import csv
import io
import json
import secrets
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import connection
from django.utils import timezone
from django.utils.translation import gettext as _
from numpy.typing import NDArray

from consultations.services import audit_record
from core.errors import Conflict, InvalidInput
from privacy.mechanisms import epsilon
from surveys import retention, selectors
from surveys.models import Answer, Question, Response, Survey

FORMATS = {"csv": "data.csv", "parquet": "data.parquet"}
CHUNK = 5_000
"""Responses read, converted and written at a time (one query of their answers, one
Parquet row group)."""
ID_BYTES = 16

_ANSWER = Answer._meta.db_table
_RESPONSE = Response._meta.db_table


@dataclass(frozen=True)
class ExportPlan:
    """What one export writes: the survey, its columns' questions, the format."""

    survey: Survey
    questions: tuple[Question, ...]
    exact: tuple[str, ...]
    fmt: str
    response_ids: NDArray[np.int64]

    @property
    def filename(self) -> str:
        return f"survey-{self.survey.pk}-answers-{self.fmt}.zip"


# --------------------------------------------------------------------------- checks


def _exact_questions(questions: Sequence[Question]) -> dict[str, Question]:
    return {q.key: q for q in questions if q.mechanism == "none"}


def _check_exact(survey: Survey, questions: Sequence[Question], asked: Sequence[str]) -> None:
    exact = _exact_questions(questions)
    unknown = [key for key in asked if key not in exact]
    if unknown:
        problem = _(
            "%(keys)s: not exact attributes of this survey; exact attributes (mechanism none) "
            "are %(exact)s."
        ) % {"keys": ", ".join(unknown), "exact": ", ".join(exact) or _("none")}
        raise InvalidInput(problem, {"exact": [problem]})
    if not asked:
        return
    if survey.status != Survey.Status.CLOSED:
        problem = _(
            "Exact attributes are exported from a closed survey only: while it is %(status)s "
            "its cells still change, and two exports could be told apart."
        ) % {"status": survey.status}
        raise Conflict(problem, {"exact": [problem]})
    min_cell = int(survey.consultation.min_cell)
    # Rows of two exports link on the distorted answers they share (the identifiers and
    # the order do not): what was exported before counts as exported together with this.
    earlier = [key for key in exported_before(survey) if key in exact and key not in asked]
    if _smallest_cell(survey, [exact[key] for key in (*asked, *earlier)]) < min_cell:
        if earlier:
            problem = _(
                "A combination of the answers to %(keys)s, together with the exact attributes "
                "exported from this survey before (%(earlier)s), is shared by fewer than "
                "min_cell = %(min_cell)s participants: rows of two exports can be linked by "
                "their distorted answers, so these exact attributes cannot be exported; export "
                "the same exact attributes as before, or none."
            ) % {"keys": ", ".join(asked), "earlier": ", ".join(earlier), "min_cell": min_cell}
        else:
            problem = _(
                "A combination of the answers to %(keys)s is shared by fewer than min_cell = "
                "%(min_cell)s participants, so these exact attributes cannot be exported "
                "together; export fewer of them, or none."
            ) % {"keys": ", ".join(asked), "min_cell": min_cell}
        raise InvalidInput(problem, {"exact": [problem]})


def exported_before(survey: Survey) -> list[str]:
    """The exact attributes earlier exports of ``survey`` held (its audit events)."""
    from consultations.models import AuditEvent

    events = AuditEvent.objects.filter(
        organisation_id=survey.consultation.organisation_id,
        action="survey.export",
        target=str(survey.pk),
    ).values_list("details", flat=True)
    keys: list[str] = []
    for details in events:
        asked = details.get("exact") if isinstance(details, dict) else None
        keys += [key for key in asked or [] if isinstance(key, str)]
    return list(dict.fromkeys(keys))


def _smallest_cell(survey: Survey, questions: Sequence[Question]) -> int:
    """The smallest number of live responses sharing one combination of the questions'
    answers (an unanswered optional question is a value of its own); one ``GROUP BY``."""
    joins, columns, params = [], [], []
    for index, question in enumerate(questions):
        alias = f"a{index}"
        joins.append(
            f"LEFT JOIN {_ANSWER} {alias} ON {alias}.response_id = r.id "
            f"AND {alias}.question_id = %s"
        )
        params.append(question.pk)
        columns += [f"{alias}.code", f"{alias}.value"]
    params.append(survey.pk)
    sql = (
        f"SELECT MIN(n) FROM (SELECT COUNT(*) AS n FROM {_RESPONSE} r {' '.join(joins)} "
        "WHERE r.survey_id = %s AND r.withdrawn_at IS NULL "
        f"GROUP BY {', '.join(columns)}) cells"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def export_plan(
    *, survey: Survey, fmt: str, exact: Sequence[str] = (), actor: str = "system"
) -> ExportPlan:
    """Check an export request and fix what it writes (raises before any byte is sent).

    Raises :class:`~surveys.retention.SurveyPurged` (410) for a purged survey,
    :class:`InvalidInput` (400) for an unknown format or exact attribute, or exact
    attributes whose smallest cell is below ``min_cell``, :class:`Conflict` (409) for
    exact attributes of a survey that is not closed. Records the audit event.
    """
    retention.require_not_purged([survey])
    if fmt not in FORMATS:
        problem = _("Unknown format %(format)s; use csv or parquet.") % {"format": repr(fmt)}
        raise InvalidInput(problem, {"format": [problem]})
    asked = tuple(dict.fromkeys(exact))
    questions = selectors.survey_questions(survey)
    _check_exact(survey, questions, asked)
    columns = tuple(q for q in questions if q.mechanism != "none" or q.key in asked)
    # A server-side cursor on PostgreSQL (iterator): 10^6 ids never sit in memory as
    # Python objects or as one client-side result, only as 8 bytes each here.
    live = Response.objects.filter(survey=survey, withdrawn_at__isnull=True).order_by()
    ids = np.fromiter(
        live.values_list("id", flat=True).iterator(chunk_size=100_000), dtype=np.int64
    )
    # A permutation of its own for every export: the row order links nothing.
    np.random.default_rng(secrets.randbits(128)).shuffle(ids)
    audit_record(
        organisation=survey.consultation.organisation,
        actor=actor,
        action="survey.export",
        target=str(survey.pk),
        details={"format": fmt, "exact": list(asked), "rows": int(ids.size)},
    )
    return ExportPlan(survey=survey, questions=columns, exact=asked, fmt=fmt, response_ids=ids)


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class Chunk:
    """Some responses' answers as columns: codes (-1: none) or values (NaN: none)."""

    identifiers: list[str]
    columns: dict[str, NDArray[Any]]


def _chunks(plan: ExportPlan) -> Iterator[Chunk]:
    by_id = {q.pk: q for q in plan.questions}
    position = {q.pk: i for i, q in enumerate(plan.questions)}
    question_ids = list(by_id)
    for start in range(0, plan.response_ids.size, CHUNK):
        ids = plan.response_ids[start : start + CHUNK]
        order = np.argsort(ids)
        sorted_ids = ids[order]
        marks = ", ".join("%s" for _ in ids)
        marks_q = ", ".join("%s" for _ in question_ids)
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT response_id, question_id, code, value FROM {_ANSWER} "
                f"WHERE response_id IN ({marks}) AND question_id IN ({marks_q})",
                [int(i) for i in ids] + question_ids,
            )
            rows = cursor.fetchall()
        m = ids.size
        codes = np.full((len(question_ids), m), -1, dtype=np.int32)
        values = np.full((len(question_ids), m), np.nan, dtype=np.float64)
        answered = np.zeros(m, dtype=bool)
        if rows:
            table = np.array(
                [(r, q, -1 if c is None else c, np.nan if v is None else v) for r, q, c, v in rows],
                dtype=np.float64,
            )
            slot = order[np.searchsorted(sorted_ids, table[:, 0].astype(np.int64))]
            column = np.array([position[int(q)] for q in table[:, 1]], dtype=np.intp)
            codes[column, slot] = table[:, 2].astype(np.int32)
            values[column, slot] = table[:, 3]
            answered[slot] = True
        # A response withdrawn while the export ran has no answers left: not a row.
        keep = np.flatnonzero(answered)
        pool = secrets.token_bytes(ID_BYTES * keep.size).hex()  # the OS's randomness
        step = 2 * ID_BYTES
        identifiers = [pool[i : i + step] for i in range(0, len(pool), step)]
        columns = {}
        for question in plan.questions:
            index = position[question.pk]
            columns[question.key] = (
                codes[index, keep] if question.is_discrete else values[index, keep]
            )
        yield Chunk(identifiers=identifiers, columns=columns)


# --------------------------------------------------------------------------- writing


class _Pipe(io.RawIOBase):
    """A write-only, non-seekable stream whose bytes are taken out as they come."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._written = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._written += len(chunk)
        return len(chunk)

    def tell(self) -> int:
        return self._written

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


def _csv_rows(plan: ExportPlan) -> Iterator[bytes]:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["participant", *(q.key for q in plan.questions)])
    yield buffer.getvalue().encode()
    labels = {q.key: np.array([*q.categories, ""], dtype=object) for q in plan.questions}
    for chunk in _chunks(plan):
        buffer.seek(0)
        buffer.truncate()
        cells: list[list[Any]] = [chunk.identifiers]
        for question in plan.questions:
            column = chunk.columns[question.key]
            if question.is_discrete:
                cells.append(labels[question.key][column].tolist())  # -1: the last, ""
            else:
                cells.append(["" if np.isnan(v) else repr(float(v)) for v in column])
        writer.writerows(zip(*cells, strict=True))
        yield buffer.getvalue().encode()


def _parquet_schema(plan: ExportPlan) -> Any:
    import pyarrow as pa

    fields = [pa.field("participant", pa.string(), nullable=False)]
    for question in plan.questions:
        kind = pa.dictionary(pa.int16(), pa.string()) if question.is_discrete else pa.float64()
        fields.append(pa.field(question.key, kind))
    return pa.schema(fields)


def _write_parquet(plan: ExportPlan, sink: Any) -> Iterator[None]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = _parquet_schema(plan)
    dictionaries = {q.key: pa.array(list(q.categories), type=pa.string()) for q in plan.questions}
    with pq.ParquetWriter(sink, schema, compression="zstd") as writer:
        for chunk in _chunks(plan):
            arrays: list[Any] = [pa.array(chunk.identifiers, type=pa.string())]
            for question in plan.questions:
                column = chunk.columns[question.key]
                if question.is_discrete:
                    indices = pa.array(column.astype(np.int16), mask=column < 0)
                    arrays.append(
                        pa.DictionaryArray.from_arrays(indices, dictionaries[question.key])
                    )
                else:
                    arrays.append(pa.array(column, mask=np.isnan(column)))
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            yield


def scheme_document(plan: ExportPlan) -> dict[str, Any]:
    """The published scheme, every discrete question with the channel the product
    reconstructs with (for ``negative_manual`` the one estimated from calibration data),
    and what the export holds."""
    scheme = selectors.survey_scheme(plan.survey)
    by_key = {q.key: q for q in selectors.survey_questions(plan.survey)}
    questions = []
    for item in scheme["questions"]:
        question = by_key[item["key"]]
        item = dict(item)
        if question.is_discrete:
            channel = selectors.question_channel(question)
            item["channel"] = channel.tolist()
            if "epsilon" not in item:  # negative_manual: the channel estimated from calibration
                value = epsilon(channel)
                item["epsilon"] = value if value is not None and np.isfinite(value) else None
        item["exported"] = question in plan.questions
        questions.append(item)
    consultation = plan.survey.consultation
    return {
        **scheme,
        "questions": questions,
        "consultation": consultation.pk,
        "thresholds": {
            "min_responses": consultation.min_responses,
            "min_cell": consultation.min_cell,
        },
        "export": {
            "format": plan.fmt,
            "file": FORMATS[plan.fmt],
            "rows": int(plan.response_ids.size),
            "columns": ["participant", *(q.key for q in plan.questions)],
            "exact_attributes": list(plan.exact),
            "exported_at": timezone.now().replace(minute=0, second=0, microsecond=0).isoformat(),
        },
    }


README = """Distorted answers of survey {survey} ("{title}")

{file}: one row per response that had not been withdrawn when the export was made
({rows} rows). Columns: participant, then one per question ({columns}).

- participant: a random identifier made for this export only. It is not the portal's
  reference, and another export (of this or any other survey) gives every participant a
  different one, in a different row order: exports cannot be joined row by row.
- A discrete question's cell is the category the participant REPORTED, after the
  randomisation on their device; a continuous question's cell is the reported value
  (true value plus noise). An empty cell: an optional question left unanswered.
- Exact attributes (mechanism "none", true answers) are {exact}.

scheme.json: every question's categories, mechanism and parameters, and for discrete
questions the channel C[i][j] = Pr(reported category j | true category i) (rows in the
order of "categories") and its epsilon (local differential privacy, ln of the largest
ratio within a column). Continuous questions carry the range, the mechanism and, where
published, the reporting grid. To estimate the true distribution of a discrete question,
count the reported categories (vector r) and solve r = n * p C for p, e.g. by
expectation-maximisation (Agrawal and Aggarwal's EM, "em_as" in the product) or by
inverting C ("eq"): the product's own estimates come from the same counts and channels.

The consultation's disclosure thresholds are in scheme.json ("thresholds"): publish no
number about fewer than min_cell participants.
"""


def _readme(plan: ExportPlan) -> str:
    exact = (
        "included: " + ", ".join(plan.exact) + " (every combination of their answers is "
        "shared by at least min_cell participants)"
        if plan.exact
        else "left out"
    )
    return README.format(
        survey=plan.survey.pk,
        title=plan.survey.title,
        file=FORMATS[plan.fmt],
        rows=int(plan.response_ids.size),
        columns=", ".join(q.key for q in plan.questions) or "none",
        exact=exact,
    )


def stream_zip(plan: ExportPlan) -> Iterator[bytes]:
    """The export's zip, piece by piece (bounded memory whatever the number of rows)."""
    pipe = _Pipe()
    # Level 1: the data compress well at any level, and the export is CPU-bound.
    with zipfile.ZipFile(
        pipe, mode="w", compression=zipfile.ZIP_DEFLATED, compresslevel=1
    ) as archive:
        archive.writestr("README.txt", _readme(plan))
        archive.writestr(
            "scheme.json", json.dumps(scheme_document(plan), indent=2, ensure_ascii=False)
        )
        yield pipe.take()
        with archive.open(FORMATS[plan.fmt], mode="w", force_zip64=True) as member:
            if plan.fmt == "csv":
                for piece in _csv_rows(plan):
                    member.write(piece)
                    yield pipe.take()
            else:
                for _ in _write_parquet(plan, member):
                    yield pipe.take()
    yield pipe.take()


__all__ = ["CHUNK", "FORMATS", "ExportPlan", "export_plan", "scheme_document", "stream_zip"]
