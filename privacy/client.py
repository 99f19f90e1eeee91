"""Python client for portals and simulations: fetch a scheme, distort, submit.

The Python twin of ``privacy/static/privacy/distort.js``. Distortion reuses the engine's
vectorised functions (:func:`privacy.mechanisms.distort_codes` and the noise models), so
a simulated population of thousands of residents is distorted in a few array operations
and by exactly the code the estimators assume. Only distorted answers may be passed to
:class:`PortalClient`; the REST contract is /work/shared/design/api.md.

No Django import here: the module is usable from any portal backend, benchmark or notebook.
"""

from __future__ import annotations

import email.utils
import itertools
import json
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import numpy as np
import requests
from numpy.typing import ArrayLike, NDArray

from privacy.mechanisms import distort_codes, noise_model

__all__ = [
    "ClientError",
    "PortalClient",
    "distort_answers",
    "distort_table",
    "fetch_scheme",
    "table_responses",
]

# Discrete mechanisms the client samples from the published channel, and those whose
# answer is sent as it is (negative_manual: the resident's own "not me" choice).
CHANNEL_MECHANISMS = frozenset({"randomised_response", "negative_uniform", "negative_gaussian"})
AS_IS_MECHANISMS = frozenset({"none", "negative_manual"})
DISCRETE_TYPES = frozenset({"binary", "nominal", "ordinal"})
PARTICIPANT = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_BULK = 10_000

Scheme = Mapping[str, Any]


# --- distortion -----------------------------------------------------------------------


def _questions(scheme: Scheme) -> dict[str, Mapping[str, Any]]:
    questions = scheme.get("questions") if isinstance(scheme, Mapping) else None
    if not isinstance(questions, list):
        raise ValueError("not a published scheme: 'questions' is missing")
    return {q["key"]: q for q in questions}


def _fail(question: Mapping[str, Any], message: str) -> ValueError:
    return ValueError(f"question {question.get('key')!r}: {message}")


def _distort_discrete(
    question: Mapping[str, Any], column: NDArray[Any], rng: np.random.Generator
) -> NDArray[np.str_]:
    categories = list(question.get("categories") or [])
    if len(categories) < 2:
        raise _fail(question, "a discrete question needs at least two categories")
    name = question["mechanism"]["name"]
    if name not in CHANNEL_MECHANISMS | AS_IS_MECHANISMS:
        raise _fail(question, f"unknown mechanism {name!r} for a {question['type']} question")
    # Labels only: codes would be ambiguous for labels such as "1".."5".
    if column.dtype.kind not in "UO":
        raise _fail(
            question, f"answers must be category labels (strings), got dtype {column.dtype}"
        )
    labels, inverse = np.unique(column, return_inverse=True)
    position = {label: code for code, label in enumerate(categories)}
    unknown = [label for label in labels.tolist() if label not in position]
    if unknown:
        raise _fail(question, f"unknown categories {unknown[:5]!r}; expected one of {categories!r}")
    # One dictionary look-up per distinct label, then a gather: no loop over residents.
    codes = np.asarray([position[label] for label in labels.tolist()], dtype=np.intp)[inverse]
    names = np.asarray(categories)
    if name in AS_IS_MECHANISMS:
        return names[codes]
    channel = question.get("channel")
    if channel is None or np.shape(channel) != (len(categories), len(categories)):
        raise _fail(
            question, f"the scheme must carry a {len(categories)}x{len(categories)} channel"
        )
    try:
        return names[distort_codes(codes, channel, rng)]
    except ValueError as exc:
        raise _fail(question, str(exc)) from None


def _noise(question: Mapping[str, Any]) -> Any:
    params = {k: v for k, v in question["mechanism"].items() if k != "name"}
    name = question["mechanism"]["name"]
    if name == "retention_replacement":
        params["low"], params["high"] = _range(question)
    try:
        return noise_model(name, **params)
    except ValueError as exc:
        raise _fail(question, str(exc)) from None


def _range(question: Mapping[str, Any]) -> tuple[float, float]:
    bounds = question.get("range")
    if not (isinstance(bounds, list | tuple) and len(bounds) == 2):
        raise _fail(question, f"needs a range [low, high], got {bounds!r}")
    return float(bounds[0]), float(bounds[1])


def _distort_continuous(
    question: Mapping[str, Any], column: NDArray[Any], rng: np.random.Generator
) -> NDArray[np.float64]:
    model = _noise(question)
    if column.dtype.kind not in "iuf":
        raise _fail(question, f"answers must be numbers, got dtype {column.dtype}")
    values = column.astype(np.float64)
    if not np.all(np.isfinite(values)):
        raise _fail(question, "answers must be finite numbers")
    if question.get("range") is not None:
        low, high = _range(question)
        outside = (values < low) | (values > high)
        if np.any(outside):
            raise _fail(
                question, f"answer {values[outside][0]!r} is outside the range [{low}, {high}]"
            )
    return np.asarray(model.distort(values, rng), dtype=np.float64)


def distort_table(
    scheme: Scheme, columns: Mapping[str, ArrayLike], rng: np.random.Generator
) -> dict[str, NDArray[Any]]:
    """Distort the true answers of many residents at once, as their devices would.

    Parameters
    ----------
    scheme : mapping
        A published scheme (``GET /api/v1/surveys/{id}/scheme/``).
    columns : mapping of str to array_like of shape (n,)
        True answers by question key, one entry per resident: category labels for
        discrete questions, numbers for continuous ones. For ``negative_manual``
        questions the column holds the residents' own chosen negative categories.
    rng : numpy.random.Generator
        Source of randomness; the same seed gives the same table.

    Returns
    -------
    dict of str to ndarray of shape (n,)
        Labels (discrete) or floats (continuous) to send, by question key.

    Raises
    ------
    ValueError
        Unknown question key, columns of different lengths or not 1-D, an unknown
        category, a non-finite or out-of-range number, an unknown mechanism, or a
        discrete scheme entry without its channel.
    """
    questions = _questions(scheme)
    arrays = {key: np.asarray(column) for key, column in columns.items()}
    lengths = {array.shape for array in arrays.values()}
    if len(lengths) > 1 or any(len(shape) != 1 for shape in lengths):
        raise ValueError(f"columns must be 1-D and of equal length, got shapes {sorted(lengths)}")
    distorted: dict[str, NDArray[Any]] = {}
    for key, column in arrays.items():
        question = questions.get(key)
        if question is None:
            raise ValueError(f"unknown question {key!r} for survey {scheme.get('survey')}")
        if question.get("type") == "continuous":
            distorted[key] = _distort_continuous(question, column, rng)
        elif question.get("type") in DISCRETE_TYPES:
            distorted[key] = _distort_discrete(question, column, rng)
        else:
            raise _fail(question, f"unknown question type {question.get('type')!r}")
    return distorted


def distort_answers(
    scheme: Scheme, answers: Mapping[str, Any], rng: np.random.Generator
) -> dict[str, str | float]:
    """Distort one resident's answers ``{question key: true answer}``.

    The same as :func:`distort_table` with one row; returns plain ``str``/``float``
    values ready for :meth:`PortalClient.submit`. Unlike the browser library this
    does not memoise: a portal backend that lets a resident answer again must keep the
    first distorted answers itself (permanent randomisation).
    """
    for key, value in answers.items():
        if isinstance(value, bool) or not isinstance(value, str | int | float | np.generic):
            raise ValueError(
                f"answer to {key!r} must be a category label or a number, got {value!r}"
            )
    table = distort_table(scheme, {key: [value] for key, value in answers.items()}, rng)
    return {key: column[0].item() for key, column in table.items()}


def table_responses(
    participants: ArrayLike, distorted: Mapping[str, ArrayLike]
) -> list[dict[str, Any]]:
    """Turn a distorted table into response objects for :meth:`PortalClient.submit_bulk`."""
    references = np.asarray(participants).tolist()
    columns = {key: np.asarray(column).tolist() for key, column in distorted.items()}
    if any(len(column) != len(references) for column in columns.values()):
        raise ValueError("every column needs one answer per participant")
    return [
        {"participant": reference, "answers": {key: column[row] for key, column in columns.items()}}
        for row, reference in enumerate(references)
    ]


# --- HTTP -----------------------------------------------------------------------------


class ClientError(Exception):
    """The server refused a request, or kept failing until the client gave up.

    Attributes
    ----------
    status : int or None
        HTTP status of the last answer; ``None`` if no answer came (connection failures).
    detail : str
        The server's ``detail`` (or a description of the failure).
    errors : dict
        The server's ``errors``, naming the offending fields or items. For a bulk
        submission, item indices are relative to the batch starting at ``batch_start``.
    """

    def __init__(self, status: int | None, detail: str, errors: Mapping[str, Any] | None = None):
        self.status = status
        self.detail = detail
        self.errors = dict(errors or {})
        self.batch_start: int | None = None
        self.created_before: int | None = None
        super().__init__(f"HTTP {status}: {detail}" if status is not None else detail)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _retry_after(response: requests.Response) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date)."""
    header = response.headers.get("Retry-After")
    if not header:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(header)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class PortalClient:
    """A portal's connection to the API (``portal`` or ``analyst`` key).

    Retries 429 (waiting as long as ``Retry-After`` says), 5xx and connection errors
    with capped exponential backoff and jitter, at most ``max_attempts`` times in all;
    any other 4xx raises :class:`ClientError` at once.

    Parameters
    ----------
    base_url : str
        The server's root URL (``https://consult.example.org``); ``/api/v1`` is appended.
    key : str
        API key, sent as ``Authorization: Bearer <key>``.
    session : requests.Session, optional
        To share connections or configure proxies and certificates.
    timeout : float
        Seconds per request (connect and read).
    max_attempts : int
        Attempts per request, including the first.
    backoff, max_backoff : float
        First backoff delay in seconds, doubled per attempt up to ``max_backoff``.
    max_wait : float
        Longest ``Retry-After`` the client will honour; a longer one raises
        :class:`ClientError` (429) so the caller can decide.
    sleep : callable
        How to wait (a seam for tests and for async wrappers).
    """

    def __init__(
        self,
        base_url: str,
        key: str,
        session: requests.Session | None = None,
        *,
        timeout: float = 30.0,
        max_attempts: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        max_wait: float = 120.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self.base_url = base_url.rstrip("/")
        self.session = session or requests.Session()
        self.timeout = timeout
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_wait = max_wait
        self._sleep = sleep
        self._jitter = random.Random()
        self._headers = {
            "Authorization": f"Bearer {key}",
            "Accept": "application/json",
            "Content-Type": "application/json",
        }

    # -- public API --

    def scheme(self, survey_id: int) -> dict[str, Any]:
        """The survey's published scheme."""
        scheme: dict[str, Any] = self._request("GET", f"/surveys/{int(survey_id)}/scheme/").json()
        return scheme

    def submit(
        self, survey_id: int, participant: str, answers: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Submit one resident's distorted answers; returns the server's JSON body."""
        body = {"participant": _participant(participant), "answers": dict(answers)}
        response = self._request("POST", f"/surveys/{int(survey_id)}/responses/", body)
        return response.json() if response.content else {}

    def submit_bulk(
        self, survey_id: int, responses: Iterable[Mapping[str, Any]], batch_size: int = 5000
    ) -> int:
        """Submit distorted responses in batches; returns how many were created.

        Each batch is atomic on the server. If one is refused, the batches before it stay
        stored: the :class:`ClientError` carries ``batch_start`` (index of the refused
        batch's first item) and ``created_before``.
        """
        if not 1 <= batch_size <= MAX_BULK:
            raise ValueError(f"batch_size must be in 1..{MAX_BULK}, got {batch_size}")
        created = 0
        start = 0
        iterator = iter(responses)
        path = f"/surveys/{int(survey_id)}/responses/bulk/"
        while batch := list(itertools.islice(iterator, batch_size)):
            for response in batch:
                _participant(response.get("participant"))
            try:
                answer = self._request("POST", path, {"responses": batch})
            except ClientError as error:
                error.batch_start, error.created_before = start, created
                raise
            created += int(answer.json().get("created", len(batch)))
            start += len(batch)
        return created

    def withdraw(self, survey_id: int, participant: str) -> None:
        """Withdraw a participant's response; later analyses no longer see it."""
        self._request("DELETE", f"/surveys/{int(survey_id)}/responses/{_participant(participant)}/")

    # -- transport --

    def _request(self, method: str, path: str, body: Any = None) -> requests.Response:
        url = f"{self.base_url}/api/v1{path}"
        data = None if body is None else json.dumps(body, default=_json_default)
        # Set once an attempt may have reached the server without us seeing the answer,
        # so that a 409 on a later attempt can say the first one may have been stored.
        maybe_stored = False
        for attempt in range(1, self.max_attempts + 1):
            last = attempt == self.max_attempts
            try:
                response = self.session.request(
                    method, url, data=data, headers=self._headers, timeout=self.timeout
                )
            except (requests.ConnectionError, requests.Timeout) as exc:
                if last:
                    raise ClientError(
                        None, f"{method} {url} failed after {attempt} attempts: {exc}"
                    ) from exc
                maybe_stored = maybe_stored or not isinstance(exc, requests.ConnectTimeout)
                self._sleep(self._backoff_delay(attempt))
                continue
            status = response.status_code
            if status == 429 or status >= 500:
                wait = _retry_after(response) if status == 429 else None
                if wait is not None and wait > self.max_wait:
                    raise self._error(response, f" (Retry-After {wait:.0f} s exceeds max_wait)")
                if last:
                    raise self._error(response, f" (gave up after {attempt} attempts)")
                maybe_stored = maybe_stored or status >= 500
                self._sleep(self._backoff_delay(attempt) if wait is None else wait)
                continue
            if status >= 400:
                hint = ""
                if status == 409 and maybe_stored:
                    hint = " (an earlier attempt of this request may have been stored)"
                raise self._error(response, hint)
            return response
        raise AssertionError("unreachable")  # pragma: no cover

    def _backoff_delay(self, attempt: int) -> float:
        # Jitter spreads out clients that failed together, so they do not return together.
        cap = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return cap * (0.5 + 0.5 * self._jitter.random())

    @staticmethod
    def _error(response: requests.Response, hint: str = "") -> ClientError:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            payload = {}
        detail = str(payload.get("detail") or response.reason or "request failed")
        errors = payload.get("errors") if isinstance(payload.get("errors"), dict) else {}
        return ClientError(response.status_code, detail + hint, errors)


def _participant(reference: Any) -> str:
    if not isinstance(reference, str) or not PARTICIPANT.fullmatch(reference):
        raise ValueError(f"participant must be 1-64 characters of [A-Za-z0-9_-], got {reference!r}")
    return reference


def fetch_scheme(
    base_url: str, survey_id: int, key: str, *, session: requests.Session | None = None
) -> dict[str, Any]:
    """Fetch a survey's published scheme (``GET /api/v1/surveys/{id}/scheme/``)."""
    return PortalClient(base_url, key, session).scheme(survey_id)
