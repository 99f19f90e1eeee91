"""HTTP side of the portal client: fetch a scheme, submit distorted answers, withdraw.

The REST contract is the server's ``docs``/OpenAPI schema (``/api/schema/``): errors are
``4xx`` with ``{"detail": ..., "errors": {...}}``. Only distorted answers may be passed here
(:func:`consultation_client.distort_answers`).
"""

from __future__ import annotations

import email.utils
import itertools
import json
import random
import re
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any

import requests

__all__ = ["ClientError", "PortalClient", "fetch_scheme"]

PARTICIPANT = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_BULK = 10_000


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
    # numpy scalars and arrays (from simulations) without importing numpy.
    if hasattr(value, "tolist"):
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
    tokens : MutableMapping, optional
        Where the withdrawal tokens returned by :meth:`submit` and :meth:`submit_bulk`
        are kept, keyed by :func:`token_key` (``"<survey id>:<participant>"``): keep it
        beside the memoised distorted answers, e.g. a :class:`shelve.Shelf`. A plain dict
        by default.
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
        tokens: MutableMapping[str, str] | None = None,
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
        self.tokens: MutableMapping[str, str] = {} if tokens is None else tokens
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
        result: dict[str, Any] = response.json() if response.content else {}
        if result.get("withdrawal_token"):
            self.tokens[token_key(survey_id, participant)] = result["withdrawal_token"]
        return result

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
            result = answer.json()
            for response, token in zip(batch, result.get("withdrawal_tokens") or [], strict=False):
                self.tokens[token_key(survey_id, response["participant"])] = token
            created += int(result.get("created", len(batch)))
            start += len(batch)
        return created

    def withdraw(
        self, survey_id: int, participant: str, withdrawal_token: str | None = None
    ) -> None:
        """Withdraw a participant's response; later analyses no longer see it.

        The token is the one :meth:`submit` kept in ``tokens`` unless given. The reference
        and token travel in a POST body, never in a URL (URLs end up in logs).
        """
        key = token_key(survey_id, _participant(participant))
        token = withdrawal_token or self.tokens.get(key)
        if not token:
            raise ValueError(
                f"no withdrawal token kept for participant {participant!r} of survey {survey_id}"
            )
        body = {"participant": participant, "withdrawal_token": token}
        self._request("POST", f"/surveys/{int(survey_id)}/responses/withdraw/", body)
        self.tokens.pop(key, None)

    def budget(
        self, survey_id: int, participant: str, withdrawal_token: str | None = None
    ) -> dict[str, Any] | None:
        """``{"budget", "spent", "remaining"}`` (ε) of the participant in the survey's
        consultation, or ``None`` when no withdrawal token is kept for them.

        The server wants any of the participant's withdrawal tokens in the consultation:
        the one kept for this survey is tried first, then the others kept for this
        participant (a token of another consultation answers 404 and the next is tried).
        """
        reference = _participant(participant)
        if withdrawal_token:
            tokens = [withdrawal_token]
        else:
            own = self.tokens.get(token_key(survey_id, reference))
            tokens = [own] if own else []
            tokens += [
                token
                for key, token in self.tokens.items()
                if key.endswith(f":{reference}") and token not in tokens
            ]
        for token in tokens:
            body = {"participant": reference, "withdrawal_token": token}
            try:
                response = self._request(
                    "POST", f"/surveys/{int(survey_id)}/responses/budget/", body
                )
            except ClientError as exc:
                if exc.status == 404:
                    continue
                raise
            found: dict[str, Any] = response.json()
            return found
        return None

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


def token_key(survey_id: int, participant: str) -> str:
    """The key under which :class:`PortalClient` keeps a participant's withdrawal token."""
    return f"{int(survey_id)}:{participant}"


def _participant(reference: Any) -> str:
    if not isinstance(reference, str) or not PARTICIPANT.fullmatch(reference):
        raise ValueError(f"participant must be 1-64 characters of [A-Za-z0-9_-], got {reference!r}")
    return reference


def fetch_scheme(
    base_url: str, survey_id: int, key: str, *, session: requests.Session | None = None
) -> dict[str, Any]:
    """Fetch a survey's published scheme (``GET /api/v1/surveys/{id}/scheme/``)."""
    return PortalClient(base_url, key, session).scheme(survey_id)
