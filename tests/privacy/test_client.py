"""The Python client: distortion statistics, validation, and HTTP retries.

Distortion is checked against the published channel (chi-square) and noise model
(Kolmogorov-Smirnov) with a seeded rng, so these tests are deterministic. The HTTP tests
talk to a real server on 127.0.0.1 that plays a script of answers; requests is not mocked.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from numpy.testing import assert_array_equal
from scipy import stats

from privacy.client import (
    ClientError,
    PortalClient,
    distort_answers,
    distort_table,
    fetch_scheme,
    table_responses,
)
from privacy.mechanisms import negative_gaussian, negative_uniform, randomised_response

N = 100_000
ALPHA = 0.001

SCHEME = {
    "survey": 3,
    "status": "open",
    "questions": [
        {
            "key": "sex",
            "type": "binary",
            "categories": ["F", "M"],
            "mechanism": {"name": "randomised_response", "retain": 0.7},
            "channel": randomised_response(2, 0.7).tolist(),
            "epsilon": 0.847,
        },
        {
            "key": "satisfaction",
            "type": "ordinal",
            "categories": ["1", "2", "3", "4", "5"],
            "mechanism": {"name": "negative_uniform"},
            "channel": negative_uniform(5).tolist(),
        },
        {
            "key": "site",
            "type": "ordinal",
            "categories": list("ABCDEFG"),
            "mechanism": {"name": "negative_gaussian", "sigma": 1.5},
            "channel": negative_gaussian(7, 1.5).tolist(),
        },
        {
            "key": "skips_class",
            "type": "ordinal",
            "categories": ["never", "rarely", "often", "always"],
            "mechanism": {"name": "negative_manual"},
            "instruction": "Choose one answer that is NOT true for you.",
        },
        {
            "key": "tenure",
            "type": "binary",
            "categories": ["own", "rent"],
            "mechanism": {"name": "none"},
        },
        {
            "key": "age",
            "type": "continuous",
            "range": [16, 100],
            "mechanism": {"name": "additive_uniform", "half_width": 10},
        },
        {
            "key": "income",
            "type": "continuous",
            "range": [0, 20000],
            "mechanism": {"name": "additive_gaussian", "sigma": 800},
        },
        {
            "key": "hours",
            "type": "continuous",
            "range": [0, 80],
            "mechanism": {"name": "additive_laplace", "scale": 4},
        },
        {
            "key": "rooms",
            "type": "continuous",
            "range": [1, 9],
            "mechanism": {"name": "retention_replacement", "retain": 0.6},
        },
        {
            "key": "household",
            "type": "continuous",
            "range": [1, 12],
            "mechanism": {"name": "none"},
        },
    ],
}
QUESTIONS = {q["key"]: q for q in SCHEME["questions"]}


# --- distortion statistics ----------------------------------------------------------


@pytest.mark.parametrize("key", ["sex", "satisfaction", "site"])
def test_discrete_answers_follow_every_row_of_the_published_channel(key):
    question = QUESTIONS[key]
    categories = np.asarray(question["categories"])
    channel = np.asarray(question["channel"])
    rng = np.random.default_rng(20240601)
    true = np.repeat(categories, N // len(categories))
    sent = distort_table(SCHEME, {key: true}, rng)[key]
    for i, category in enumerate(categories):
        observed = np.array([(sent[true == category] == c).sum() for c in categories])
        possible = channel[i] > 0
        # A category the channel rules out (the truth, in a negative survey) never appears.
        assert observed[~possible].sum() == 0
        expected = channel[i][possible] * observed.sum()
        p_value = stats.chisquare(observed[possible], expected).pvalue
        assert p_value > ALPHA, f"{key}: row {category} p={p_value:.2g}, observed {observed}"


@pytest.mark.parametrize(
    ("key", "true_value", "noise"),
    [
        ("age", 40.0, stats.uniform(loc=-10, scale=20)),
        ("income", 2400.0, stats.norm(scale=800)),
        ("hours", 38.0, stats.laplace(scale=4)),
    ],
)
def test_additive_noise_has_the_published_distribution(key, true_value, noise):
    rng = np.random.default_rng(7)
    sent = distort_table(SCHEME, {key: np.full(N, true_value)}, rng)[key]
    p_value = stats.kstest(sent - true_value, noise.cdf).pvalue
    assert p_value > ALPHA, f"{key}: KS p={p_value:.2g}"


def test_retention_replacement_keeps_with_probability_retain_else_uniform_on_the_range():
    rng = np.random.default_rng(11)
    sent = distort_table(SCHEME, {"rooms": np.full(N, 3.0)}, rng)["rooms"]
    kept = int((sent == 3.0).sum())
    assert stats.binomtest(kept, N, 0.6).pvalue > ALPHA
    replaced = sent[sent != 3.0]
    assert stats.kstest(replaced, stats.uniform(loc=1, scale=8).cdf).pvalue > ALPHA


def test_answers_sent_as_they_are_for_none_and_manual_negative():
    rng = np.random.default_rng(0)
    answers = {"skips_class": "often", "tenure": "rent", "household": 3}
    assert distort_answers(SCHEME, answers, rng) == answers


def test_one_resident_gets_plain_json_values():
    sent = distort_answers(SCHEME, {"sex": "F", "age": 40, "site": "C"}, np.random.default_rng(3))
    assert type(sent["sex"]) is str and sent["sex"] in ("F", "M")
    assert type(sent["site"]) is str and sent["site"] != "C"
    assert type(sent["age"]) is float and 30 <= sent["age"] <= 50
    json.dumps(sent)


def test_the_same_seed_gives_the_same_table():
    columns = {"sex": ["F", "M"] * 50, "income": np.linspace(0, 20000, 100)}
    first = distort_table(SCHEME, columns, np.random.default_rng(5))
    second = distort_table(SCHEME, columns, np.random.default_rng(5))
    for key in columns:
        assert_array_equal(first[key], second[key])


def test_table_responses_builds_bulk_items():
    sent = {"sex": np.array(["F", "M"]), "age": np.array([40.5, 61.0])}
    assert table_responses(["p-1", "p-2"], sent) == [
        {"participant": "p-1", "answers": {"sex": "F", "age": 40.5}},
        {"participant": "p-2", "answers": {"sex": "M", "age": 61.0}},
    ]


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"sex": ["F", "X"]}, r"question 'sex': unknown categories \['X'\]"),
        ({"sex": [0, 1]}, r"question 'sex': answers must be category labels"),
        ({"satisfaction": [3]}, r"category labels"),
        ({"age": [40.0, float("nan")]}, r"question 'age': answers must be finite numbers"),
        ({"age": [40.0, float("inf")]}, r"finite numbers"),
        ({"age": ["40"]}, r"question 'age': answers must be numbers"),
        ({"age": [120.0]}, r"outside the range \[16.0, 100.0\]"),
        ({"shoe_size": ["42"]}, r"unknown question 'shoe_size'"),
        ({"sex": ["F", "M"], "age": [40.0]}, r"equal length"),
    ],
)
def test_invalid_answers_are_refused_with_a_clear_message(columns, message):
    with pytest.raises(ValueError, match=message):
        distort_table(SCHEME, columns, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"mechanism": {"name": "coin_flip"}}, r"unknown mechanism 'coin_flip'"),
        ({"channel": None}, r"must carry a 2x2 channel"),
        ({"channel": [[0.7, 0.2], [0.3, 0.7]]}, r"row 0 sums to"),
    ],
)
def test_a_broken_discrete_scheme_entry_is_refused(change, message):
    scheme = {"survey": 3, "questions": [{**QUESTIONS["sex"], **change}]}
    with pytest.raises(ValueError, match=message):
        distort_answers(scheme, {"sex": "F"}, np.random.default_rng(0))


@pytest.mark.parametrize(
    ("mechanism", "message"),
    [
        ({"name": "additive_cauchy", "scale": 1}, r"unknown noise model 'additive_cauchy'"),
        ({"name": "additive_gaussian", "sigma": -1}, r"sigma must be > 0"),
        ({"name": "additive_uniform"}, r"needs parameter"),
    ],
)
def test_a_broken_continuous_scheme_entry_is_refused(mechanism, message):
    scheme = {"survey": 3, "questions": [{**QUESTIONS["age"], "mechanism": mechanism}]}
    with pytest.raises(ValueError, match=f"question 'age': .*{message}"):
        distort_answers(scheme, {"age": 40}, np.random.default_rng(0))


def test_a_boolean_is_not_an_answer():
    with pytest.raises(ValueError, match="must be a category label or a number"):
        distort_answers(SCHEME, {"household": True}, np.random.default_rng(0))


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
    server.script = [(204, {}, None), (200, {}, SCHEME)]
    PortalClient(server.url + "/", "k").withdraw(3, "p-000123")
    assert fetch_scheme(server.url, 3, "k") == SCHEME
    assert [(r["method"], r["path"]) for r in server.requests] == [
        ("DELETE", "/api/v1/surveys/3/responses/p-000123/"),
        ("GET", "/api/v1/surveys/3/scheme/"),
    ]


@pytest.mark.parametrize("participant", ["", "p 1", "p/1", "x" * 65, None])
def test_a_bad_participant_reference_is_refused_before_sending(server, participant):
    client = PortalClient(server.url, "k")
    with pytest.raises(ValueError, match="participant must be"):
        client.submit(3, participant, {"sex": "F"})
    with pytest.raises(ValueError, match="participant must be"):
        client.submit_bulk(3, [{"participant": participant, "answers": {}}])
    assert server.requests == []


def test_numpy_values_are_sent_as_json_numbers(server):
    server.script = [(201, {}, {})]
    sent = distort_table(SCHEME, {"age": np.array([40.0])}, np.random.default_rng(1))
    PortalClient(server.url, "k").submit(3, "p-1", {"age": sent["age"][0]})
    assert server.requests[0]["json"]["answers"]["age"] == pytest.approx(float(sent["age"][0]))
