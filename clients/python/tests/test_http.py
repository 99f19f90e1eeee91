"""consultation_client.PortalClient: retries, backoff, errors and bulk batches.

The tests talk to a real HTTP server on 127.0.0.1 that plays a script of answers;
requests is not mocked.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from consultation_client import ClientError, PortalClient, fetch_scheme

UTC = UTC
SCHEME = {"survey": 3, "status": "open", "questions": []}

# --- HTTP ------------------------------------------------------------------------------


class ScriptedServer(ThreadingHTTPServer):
    """Answers requests with the next (status, headers, body) of ``script``."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.script: list[tuple[int, dict[str, str], object]] = []
        self.requests: list[dict[str, object]] = []
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _ScriptedHandler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        with self.server.lock:
            self.server.requests.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "authorization": self.headers.get("Authorization"),
                    "json": json.loads(body) if body else None,
                    "time": time.monotonic(),
                }
            )
            status, headers, payload = self.server.script.pop(0)
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, format, *args):  # keep test output quiet
        pass


@pytest.fixture
def server():
    httpd = ScriptedServer()
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


class Sleeps(list):
    """Records the waits the client asks for, without waiting."""

    def __call__(self, seconds):
        self.append(seconds)


def test_429_waits_as_long_as_retry_after_then_succeeds(server):
    server.script = [(429, {"Retry-After": "1"}, {"detail": "slow down"}), (201, {}, {})]
    client = PortalClient(server.url, "k-portal")
    client.submit(3, "p-000123", {"sex": "M", "age": 43.2})
    first, second = server.requests
    assert second["time"] - first["time"] >= 0.95
    for request in server.requests:
        assert request["method"] == "POST"
        assert request["path"] == "/api/v1/surveys/3/responses/"
        assert request["authorization"] == "Bearer k-portal"
        assert request["json"] == {"participant": "p-000123", "answers": {"sex": "M", "age": 43.2}}


def test_retry_after_as_an_http_date_is_honoured(server):
    when = datetime.now(UTC) + timedelta(seconds=30)
    server.script = [(429, {"Retry-After": format_datetime(when, usegmt=True)}, {}), (201, {}, {})]
    sleeps = Sleeps()
    PortalClient(server.url, "k", sleep=sleeps).submit(3, "p-1", {"sex": "F"})
    assert len(sleeps) == 1 and 25 <= sleeps[0] <= 30


def test_server_errors_are_retried_with_growing_bounded_backoff(server):
    server.script = [(503, {}, {}), (500, {}, {}), (502, {}, {}), (201, {}, {})]
    sleeps = Sleeps()
    client = PortalClient(server.url, "k", backoff=1.0, max_backoff=3.0, sleep=sleeps)
    client.submit(3, "p-1", {"sex": "F"})
    assert len(server.requests) == 4
    caps = [1.0, 2.0, 3.0]
    assert all(cap / 2 <= wait <= cap for wait, cap in zip(sleeps, caps, strict=True))


def test_attempts_are_bounded(server):
    server.script = [(429, {"Retry-After": "0"}, {"detail": "busy"})] * 3
    client = PortalClient(server.url, "k", max_attempts=3, sleep=Sleeps())
    with pytest.raises(ClientError) as caught:
        client.submit(3, "p-1", {"sex": "F"})
    assert caught.value.status == 429
    assert "busy" in caught.value.detail and "gave up after 3 attempts" in caught.value.detail
    assert len(server.requests) == 3


def test_a_retry_after_beyond_max_wait_is_not_slept_through(server):
    server.script = [(429, {"Retry-After": "3600"}, {"detail": "quota"})]
    sleeps = Sleeps()
    with pytest.raises(ClientError, match="exceeds max_wait") as caught:
        PortalClient(server.url, "k", max_wait=60, sleep=sleeps).submit(3, "p-1", {"sex": "F"})
    assert caught.value.status == 429 and sleeps == []


def test_other_4xx_raise_client_error_at_once(server):
    errors = {"answers": {"sex": ["'X' is not one of ['F', 'M']"]}}
    server.script = [(400, {}, {"detail": "Invalid answers.", "errors": errors})]
    sleeps = Sleeps()
    with pytest.raises(ClientError) as caught:
        PortalClient(server.url, "k", sleep=sleeps).submit(3, "p-1", {"sex": "X"})
    assert (caught.value.status, caught.value.detail, caught.value.errors) == (
        400,
        "Invalid answers.",
        errors,
    )
    assert len(server.requests) == 1 and sleeps == []


def test_a_409_after_a_failed_attempt_says_the_first_may_have_been_stored(server):
    server.script = [(502, {}, {}), (409, {}, {"detail": "Already answered."})]
    with pytest.raises(ClientError, match="may have been stored") as caught:
        PortalClient(server.url, "k", sleep=Sleeps()).submit(3, "p-1", {"sex": "F"})
    assert caught.value.status == 409


def test_connection_errors_are_retried_then_reported():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sleeps = Sleeps()
    client = PortalClient(f"http://127.0.0.1:{port}", "k", max_attempts=3, sleep=sleeps)
    with pytest.raises(ClientError, match="failed after 3 attempts") as caught:
        client.scheme(3)
    assert caught.value.status is None and len(sleeps) == 2


def test_submit_bulk_sends_batches_and_counts_created(server):
    server.script = [
        (201, {}, {"created": 5}),
        (201, {}, {"created": 5}),
        (201, {}, {"created": 2}),
    ]
    responses = ({"participant": f"p-{i}", "answers": {"sex": "F"}} for i in range(12))
    assert PortalClient(server.url, "k").submit_bulk(3, responses, batch_size=5) == 12
    assert [len(r["json"]["responses"]) for r in server.requests] == [5, 5, 2]
    assert {r["path"] for r in server.requests} == {"/api/v1/surveys/3/responses/bulk/"}
    assert server.requests[1]["json"]["responses"][0]["participant"] == "p-5"


def test_a_refused_bulk_batch_says_where_it_started(server):
    server.script = [
        (201, {}, {"created": 5}),
        (400, {}, {"detail": "Invalid batch.", "errors": {"responses": {"2": "bad"}}}),
    ]
    responses = [{"participant": f"p-{i}", "answers": {"sex": "F"}} for i in range(12)]
    with pytest.raises(ClientError) as caught:
        PortalClient(server.url, "k").submit_bulk(3, responses, batch_size=5)
    assert (caught.value.batch_start, caught.value.created_before) == (5, 5)
    assert caught.value.errors == {"responses": {"2": "bad"}}
    assert len(server.requests) == 2


def test_withdraw_and_fetch_scheme(server):
    server.script = [
        (201, {}, {"participant": "p-000123", "withdrawal_token": "tok-1"}),
        (204, {}, None),
        (200, {}, SCHEME),
    ]
    client = PortalClient(server.url + "/", "k")
    client.submit(3, "p-000123", {"sex": "F"})
    assert client.tokens == {"3:p-000123": "tok-1"}  # kept beside the answers
    client.withdraw(3, "p-000123")
    assert client.tokens == {}
    with pytest.raises(ValueError, match="no withdrawal token"):
        client.withdraw(3, "p-000123")
    assert fetch_scheme(server.url, 3, "k") == SCHEME
    assert [(r["method"], r["path"]) for r in server.requests] == [
        ("POST", "/api/v1/surveys/3/responses/"),
        ("POST", "/api/v1/surveys/3/responses/withdraw/"),
        ("GET", "/api/v1/surveys/3/scheme/"),
    ]
    # The reference travels in the body, never in the URL.
    assert server.requests[1]["json"] == {"participant": "p-000123", "withdrawal_token": "tok-1"}


def test_bulk_submission_keeps_one_token_per_participant(server):
    server.script = [(201, {}, {"created": 2, "withdrawal_tokens": ["t-a", "t-b"]})]
    client = PortalClient(server.url, "k")
    items = [{"participant": "a", "answers": {}}, {"participant": "b", "answers": {}}]
    assert client.submit_bulk(3, items) == 2
    assert client.tokens == {"3:a": "t-a", "3:b": "t-b"}


@pytest.mark.parametrize("participant", ["", "p 1", "p/1", "x" * 65, None])
def test_a_bad_participant_reference_is_refused_before_sending(server, participant):
    client = PortalClient(server.url, "k")
    with pytest.raises(ValueError, match="participant must be"):
        client.submit(3, participant, {"sex": "F"})
    with pytest.raises(ValueError, match="participant must be"):
        client.submit_bulk(3, [{"participant": participant, "answers": {}}])
    assert server.requests == []


def test_array_like_values_are_sent_as_json_numbers(server):
    class Scalar:  # what a numpy scalar looks like to the client, which does not import numpy
        def tolist(self):
            return 40.5

    server.script = [(201, {}, {})]
    PortalClient(server.url, "k").submit(3, "p-1", {"age": Scalar()})
    assert server.requests[0]["json"]["answers"]["age"] == 40.5


def test_a_value_that_is_not_json_is_refused_before_sending(server):
    with pytest.raises(TypeError, match="object is not JSON serialisable"):
        PortalClient(server.url, "k").submit(3, "p-1", {"age": object()})
    assert server.requests == []


def test_budget_tries_the_participants_kept_tokens_of_the_consultation(server):
    """Issue 28: the survey's own token first, then the participant's others (a token of
    another consultation answers 404 and the next one is tried); never another
    participant's token; None when nothing is kept."""
    server.script = [
        (404, {}, {"detail": "No participant with this reference and withdrawal token."}),
        (200, {}, {"budget": 4.0, "spent": 1.5, "remaining": 2.5}),
    ]
    tokens = {"7:p-1": "tok-other-consultation", "8:p-1": "tok-8", "8:p-2": "tok-p2"}
    client = PortalClient(server.url, "k", tokens=tokens)
    assert client.budget(9, "p-1") == {"budget": 4.0, "spent": 1.5, "remaining": 2.5}
    assert [r["path"] for r in server.requests] == ["/api/v1/surveys/9/responses/budget/"] * 2
    assert [r["json"] for r in server.requests] == [
        {"participant": "p-1", "withdrawal_token": "tok-other-consultation"},
        {"participant": "p-1", "withdrawal_token": "tok-8"},
    ]
    assert client.budget(9, "p-3") is None
    assert len(server.requests) == 2
