"""Webhooks: registration refuses unsafe URLs; finished jobs are delivered signed, retried
with backoff and recorded (a real HTTP receiver on 127.0.0.1, Celery tasks in-process;
deliveries are queued by the job and sent here with :func:`deliver_all`)."""

from __future__ import annotations

import itertools
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
import requests
from django.contrib.auth.models import User
from django.test import override_settings
from django.utils import timezone

from consultations.models import AuditEvent
from consultations.services import consultation_create
from reconstruction.models import AnalysisJob
from surveys.services import responses_submit_bulk, survey_create, survey_open
from tests.factories import tenant_factory
from webhooks import sender, services, signing
from webhooks.models import Delivery, Webhook
from webhooks.urlcheck import NO_PROXIES

pytestmark = pytest.mark.django_db


class Receiver(ThreadingHTTPServer):
    def __init__(self, statuses):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.statuses = list(statuses)
        self.received = []

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/hook"


class _Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append({"headers": dict(self.headers), "body": body})
        status = (
            self.server.statuses.pop(0)
            if len(self.server.statuses) > 1
            else (self.server.statuses[0])
        )
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def deliver_all():
    """Send every queued delivery with its retries, as the embedded default's sender thread
    (off in the unit tests) or the webhooks lane's workers would, backoff skipped."""
    for day in range(1, services.MAX_ATTEMPTS + 2):
        services.deliveries_send_due(timezone.now() + timedelta(days=day))


@pytest.fixture
def receiver(request):
    server = Receiver(getattr(request, "param", [200]))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def tenant():
    return tenant_factory()


@pytest.fixture
def open_survey(tenant):
    organisation = tenant.organisation
    consultation = consultation_create(organisation=organisation, title="Parks")
    survey = survey_create(
        organisation=organisation, consultation=consultation, kind="profile", title="Parks",
        questions=[{"key": "visits", "type": "nominal", "categories": ["none", "some", "many"],
                    "mechanism": {"name": "randomised_response", "retain": 0.8}}],
    )  # fmt: skip
    survey = survey_open(survey=survey)
    labels = np.array(["none", "some", "many"])[np.random.default_rng(1).integers(0, 3, 60)]
    responses_submit_bulk(
        survey=survey,
        responses=[{"participant": f"p{i}", "answers": {"visits": str(v)}}
                   for i, v in enumerate(labels)],
    )  # fmt: skip
    return survey


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://93.184.216.34/hook", "must use https"),
        ("ftp://93.184.216.34/hook", "must use https"),
        ("https://127.0.0.1/hook", "private or loopback"),
        ("https://10.20.30.40/hook", "private or loopback"),
        ("https://192.168.1.5:8443/hook", "private or loopback"),
        ("https://169.254.169.254/latest/meta-data", "private or loopback"),
        ("https://[::1]/hook", "private or loopback"),
        ("https://user:pw@93.184.216.34/hook", "user name or password"),
        ("https:///nohost", "has no host"),
    ],
)
def test_unsafe_urls_are_refused_with_a_400_naming_the_url(tenant, url, message):
    response = tenant.analyst.post(
        "/api/v1/webhooks/", {"url": url, "events": ["report.finished"]}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert message in response.json()["detail"]
    assert message in response.json()["errors"]["url"][0]
    assert not Webhook.objects.exists()


def test_a_public_https_url_is_registered_and_its_secret_shown_once(tenant):
    response = tenant.analyst.post(
        "/api/v1/webhooks/",
        {"url": "https://93.184.216.34/hook", "events": ["analysis.finished", "report.finished"]},
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert len(body["secret"]) == 64 and body["events"] == ["analysis.finished", "report.finished"]
    listed = tenant.analyst.get("/api/v1/webhooks/").json()
    assert [hook["id"] for hook in listed] == [body["id"]] and "secret" not in listed[0]
    assert AuditEvent.objects.filter(action="webhook.create", target=str(body["id"])).exists()
    # Portal keys cannot register webhooks; other organisations cannot see them.
    assert tenant.portal.post("/api/v1/webhooks/", {}, format="json").status_code == 403
    other = tenant_factory()
    assert other.analyst.get(f"/api/v1/webhooks/{body['id']}/").status_code == 404
    assert tenant.analyst.delete(f"/api/v1/webhooks/{body['id']}/").status_code == 204
    assert not Webhook.objects.exists()


def test_unknown_events_are_refused(tenant):
    response = tenant.analyst.post(
        "/api/v1/webhooks/", {"url": "https://93.184.216.34/", "events": ["job.done"]},
        format="json",
    )  # fmt: skip
    assert response.status_code == 400 and "events" in response.json()["errors"]


@override_settings(
    WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE=True, WEBHOOKS_ALLOWED_PORTS=["*"]
)
def test_a_finished_report_is_delivered_signed_and_recorded(
    tenant, open_survey, receiver, django_capture_on_commit_callbacks
):
    hook = services.webhook_create(
        organisation=tenant.organisation, url=receiver.url, events=["report.finished"],
        actor="tests",
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        created = tenant.analyst.post(f"/api/v1/surveys/{open_survey.pk}/reports/")
    assert created.status_code == 202
    deliver_all()
    (request,) = receiver.received
    headers, body = request["headers"], request["body"]
    assert headers["X-Webhook-Event"] == "report.finished"
    assert signing.verify(
        hook.secret, headers["X-Webhook-Timestamp"], body, headers["X-Webhook-Signature"]
    )
    assert abs(int(headers["X-Webhook-Timestamp"]) - time.time()) < 60
    payload = json.loads(body)
    report_id = created.json()["id"]
    assert payload["event"] == "report.finished"
    assert payload["data"]["url"] == f"/api/v1/reports/{report_id}/"
    assert payload["data"]["status"] == "succeeded"
    assert "result" not in payload["data"]  # numbers are read with the receiver's own key
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("succeeded", 1, 200)
    assert int(headers["X-Webhook-Delivery"]) == delivery.pk


@override_settings(
    WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE=True, WEBHOOKS_ALLOWED_PORTS=["*"]
)
@pytest.mark.parametrize("receiver", [[503]], indirect=True)
def test_a_failing_receiver_is_retried_then_the_delivery_is_marked_failed(
    tenant, open_survey, receiver, django_capture_on_commit_callbacks
):
    services.webhook_create(
        organisation=tenant.organisation, url=receiver.url, events=["report.finished"],
        actor="tests",
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        tenant.analyst.post(f"/api/v1/surveys/{open_survey.pk}/reports/")
    deliver_all()
    delivery = Delivery.objects.get()
    assert len(receiver.received) == services.MAX_ATTEMPTS
    assert (delivery.status, delivery.attempts) == ("failed", services.MAX_ATTEMPTS)
    assert delivery.response_status == 503 and delivery.error == "HTTP 503"
    # One delivery, several attempts: the same delivery id every time.
    assert {r["headers"]["X-Webhook-Delivery"] for r in receiver.received} == {str(delivery.pk)}


@override_settings(
    WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE=True, WEBHOOKS_ALLOWED_PORTS=["*"]
)
@pytest.mark.parametrize("receiver", [[500, 200]], indirect=True)
def test_a_retry_that_succeeds_is_recorded_with_its_attempts(
    tenant, open_survey, receiver, django_capture_on_commit_callbacks, client
):
    hook = services.webhook_create(
        organisation=tenant.organisation, url=receiver.url, events=["report.finished"],
        actor="tests",
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        tenant.analyst.post(f"/api/v1/surveys/{open_survey.pk}/reports/")
    deliver_all()
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("succeeded", 2)
    # The organiser sees it in the admin and in the API.
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    page = client.get(f"/admin/webhooks/webhook/{hook.pk}/change/").content.decode()
    assert ">delivered<" in page and ">2<" in page  # the status in plain words
    listed = tenant.analyst.get(f"/api/v1/webhooks/{hook.pk}/deliveries/").json()
    assert [(d["status"], d["attempts"]) for d in listed] == [("succeeded", 2)]


@override_settings(
    WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE=True, WEBHOOKS_ALLOWED_PORTS=["*"]
)
def test_a_finished_analysis_is_delivered_signed_whether_it_succeeded_or_was_refused(
    tenant, open_survey, receiver, django_capture_on_commit_callbacks
):
    hook = services.webhook_create(
        organisation=tenant.organisation, url=receiver.url, events=["analysis.finished"],
        actor="tests",
    )  # fmt: skip
    consultation = open_survey.consultation
    consultation.min_cell = 30  # a count of about a third of 60 answers is below it
    consultation.save(update_fields=["min_cell"])
    with django_capture_on_commit_callbacks(execute=True):
        done = tenant.analyst.post(
            "/api/v1/analyses/",
            {"survey": open_survey.pk, "kind": "distribution", "attribute": "visits"},
            format="json",
        )
        # A count of one category: its interval reaches below min_cell, so it is refused.
        refused = tenant.analyst.post(
            "/api/v1/analyses/",
            {"survey": open_survey.pk, "kind": "count",
             "where": [{"attribute": "visits", "op": "in", "value": ["none"]}]},
            format="json",
        )  # fmt: skip
        tenant.analyst.post(f"/api/v1/surveys/{open_survey.pk}/reports/")  # not listened for
    deliver_all()
    assert done.status_code == refused.status_code == 202, (done.json(), refused.json())
    statuses = {}
    for request in receiver.received:
        headers, body = request["headers"], request["body"]
        assert headers["X-Webhook-Event"] == "analysis.finished"
        assert signing.verify(
            hook.secret, headers["X-Webhook-Timestamp"], body, headers["X-Webhook-Signature"]
        )
        data = json.loads(body)["data"]
        assert data["url"] == f"/api/v1/analyses/{data['id']}/" and "result" not in data
        statuses[data["id"]] = (data["kind"], data["status"])
    refused_status = tenant.analyst.get(f"/api/v1/analyses/{refused.json()['id']}/").json()
    assert statuses == {
        done.json()["id"]: ("distribution", "succeeded"),
        refused.json()["id"]: ("count", refused_status["status"]),
    }
    assert refused_status["status"] == "refused", refused_status
    assert Delivery.objects.filter(status="succeeded", attempts=1).count() == 2


def test_an_address_refused_at_delivery_time_is_recorded_in_the_readers_language(
    tenant, open_survey, django_capture_on_commit_callbacks, client
):
    """The URL was public when registered; at delivery (in the worker, in English) it
    resolves to a private address: the delivery fails at once, without a request, and its
    reason is stored as template + parameters, read in German and Polish."""
    from django.utils import translation

    hook = Webhook.objects.create(organisation=tenant.organisation,
                                  url="https://10.20.30.40/hook", events=["report.finished"],
                                  secret="s")  # fmt: skip
    with translation.override("en"):
        with django_capture_on_commit_callbacks(execute=True):
            tenant.analyst.post(f"/api/v1/surveys/{open_survey.pk}/reports/")
        deliver_all()  # in the worker (in English)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.response_status) == ("failed", 1, None)
    assert delivery.error.startswith("The host '10.20.30.40' resolves to 10.20.30.40, a private")
    url = f"/api/v1/webhooks/{hook.pk}/deliveries/"
    (english,) = [d["error"] for d in tenant.analyst.get(url).json()]
    (german,) = [d["error"] for d in tenant.analyst.get(url, HTTP_ACCEPT_LANGUAGE="de").json()]
    (polish,) = [d["error"] for d in tenant.analyst.get(url + "?lang=pl").json()]
    assert english == delivery.error
    assert german.startswith("Der Host '10.20.30.40'") and "10.20.30.40" in german, german
    assert polish not in (english, german) and "10.20.30.40" in polish, polish
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    page = client.get(
        f"/admin/webhooks/webhook/{hook.pk}/change/", HTTP_ACCEPT_LANGUAGE="pl"
    ).content.decode()
    assert polish.replace("'", "&#x27;") in page and "a private or loopback" not in page


def test_webhooks_of_other_events_or_organisations_get_nothing(
    tenant, open_survey, django_capture_on_commit_callbacks
):
    Webhook.objects.create(organisation=tenant.organisation, url="https://93.184.216.34/",
                           events=["analysis.finished"], secret="s")  # fmt: skip
    Webhook.objects.create(organisation=tenant_factory().organisation,
                           url="https://93.184.216.34/", events=["report.finished"],
                           secret="s")  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        tenant.analyst.post(f"/api/v1/surveys/{open_survey.pk}/reports/")
    assert not Delivery.objects.exists()


def test_signatures_fail_on_a_changed_body_a_wrong_secret_or_an_old_timestamp():
    body = b'{"event": "report.finished"}'
    now = 1_800_000_000
    good = signing.signature("secret", now, body)
    assert signing.verify("secret", str(now), body, good, now=now + 10)
    assert not signing.verify("secret", str(now), body + b" ", good, now=now)
    assert not signing.verify("other", str(now), body, good, now=now)
    assert not signing.verify("secret", str(now), body, good, now=now + 301)  # replayed later
    assert not signing.verify("secret", "yesterday", body, good, now=now)


def test_backoff_grows_exponentially_and_is_capped():
    waits = [services.backoff_seconds(r) for r in range(12)]
    assert waits[:5] == [10, 20, 40, 80, 160]
    assert all(b >= a for a, b in itertools.pairwise(waits)) and max(waits) == 1800


# --------------------------------------------------------------------------- DNS rebinding

REBIND_NAME = "hooks.rebind.test"


class FakeDns:
    """``socket.getaddrinfo`` for one made-up name: the addresses given, one per lookup
    (the last one repeats); every other name goes to the real resolver."""

    def __init__(self, monkeypatch, addresses):
        self.addresses = list(addresses)
        self.lookups = []
        self.real = socket.getaddrinfo
        monkeypatch.setattr(socket, "getaddrinfo", self)

    def __call__(self, host, port, *args, **kwargs):
        if host != REBIND_NAME:
            return self.real(host, port, *args, **kwargs)
        address = self.addresses[min(len(self.lookups), len(self.addresses) - 1)]
        self.lookups.append(address)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", (address, port))]


def serve(server):
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    return server


class ReceiverOn(Receiver):
    def __init__(self, address, port=0, statuses=(200,)):
        ThreadingHTTPServer.__init__(self, (address, port), _Handler)
        self.statuses = list(statuses)
        self.received = []


def stop(*servers):
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("url", ["https://localhost/hook", "http://localhost:8080/hook"])
@override_settings(WEBHOOKS_ALLOW_HTTP=True)
def test_a_name_that_resolves_to_loopback_is_refused(tenant, url):
    response = tenant.analyst.post(
        "/api/v1/webhooks/", {"url": url, "events": ["report.finished"]}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert "'localhost' resolves to" in response.json()["errors"]["url"][0]
    assert "private or loopback" in response.json()["detail"]
    assert not Webhook.objects.exists()


@override_settings(
    WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE=True, WEBHOOKS_ALLOWED_PORTS=["*"]
)
def test_a_name_that_resolves_to_loopback_is_called_when_allowed(tenant, open_survey, receiver):
    port = receiver.server_address[1]
    hook = services.webhook_create(
        organisation=tenant.organisation, url=f"http://localhost:{port}/hook",
        events=["report.finished"], actor="tests",
    )  # fmt: skip
    delivery = Delivery.objects.create(webhook=hook, event="report.finished", payload={"a": 1})
    assert services.delivery_attempt(delivery.pk) is True
    (request,) = receiver.received
    assert request["headers"]["Host"] == f"localhost:{port}"
    assert json.loads(request["body"])["delivery"] == delivery.pk


@override_settings(
    WEBHOOKS_ALLOW_HTTP=True, WEBHOOKS_ALLOW_PRIVATE=True, WEBHOOKS_ALLOWED_PORTS=["*"]
)
def test_the_delivery_connects_to_the_address_that_was_checked(tenant, open_survey, monkeypatch):
    """DNS rebinding: the name resolves to one address when checked and to another a
    moment later; the delivery goes to the checked one (resolved once per attempt)."""
    checked = serve(ReceiverOn("127.0.0.1"))
    port = checked.server_address[1]
    try:
        rebound = serve(ReceiverOn("127.0.0.2", port))
    except OSError as exc:
        stop(checked)
        pytest.fail(f"cannot listen on 127.0.0.2 (loopback /8) for the rebinding test: {exc}")
    try:
        dns = FakeDns(monkeypatch, ["127.0.0.1", "127.0.0.1", "127.0.0.2"])
        url = f"http://{REBIND_NAME}:{port}/hook"
        hook = services.webhook_create(
            organisation=tenant.organisation, url=url, events=["report.finished"], actor="t"
        )
        delivery = Delivery.objects.create(webhook=hook, event="report.finished", payload={})
        assert services.delivery_attempt(delivery.pk) is True
        assert dns.lookups == ["127.0.0.1", "127.0.0.1"]  # registration, then the attempt
        (request,) = checked.received
        assert request["headers"]["Host"] == f"{REBIND_NAME}:{port}"
        assert rebound.received == []
        # Unpinned, the same request would have gone to the rebound address.
        assert requests.post(url, data=b"{}", timeout=5, proxies=NO_PROXIES).status_code == 200
        assert len(rebound.received) == 1 and dns.lookups[-1] == "127.0.0.2"
    finally:
        stop(checked, rebound)


@pytest.fixture
def tls_receiver(tmp_path, monkeypatch):
    """An https receiver on 127.0.0.1 whose self-signed certificate names REBIND_NAME
    (made with the openssl command), trusted through REQUESTS_CA_BUNDLE; records the
    TLS server name (SNI) each client asked for."""
    if shutil.which("openssl") is None:
        pytest.fail("The TLS webhook test needs the openssl command (apt-get install openssl).")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", f"/CN={REBIND_NAME}", "-addext", f"subjectAltName=DNS:{REBIND_NAME}",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    server = ReceiverOn("127.0.0.1")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.server_names = []
    context.sni_callback = lambda sock, name, ctx: server.server_names.append(name)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(cert))
    serve(server)
    yield server
    stop(server)


@override_settings(WEBHOOKS_ALLOW_PRIVATE=True, WEBHOOKS_ALLOWED_PORTS=["*"])
def test_a_pinned_https_delivery_verifies_the_certificate_for_the_name(
    tenant, open_survey, tls_receiver, monkeypatch
):
    port = tls_receiver.server_address[1]
    dns = FakeDns(monkeypatch, ["127.0.0.1", "127.0.0.1", "127.0.0.2"])
    hook = services.webhook_create(
        organisation=tenant.organisation, url=f"https://{REBIND_NAME}:{port}/hook",
        events=["report.finished"], actor="tests",
    )  # fmt: skip
    delivery = Delivery.objects.create(webhook=hook, event="report.finished", payload={})
    assert services.delivery_attempt(delivery.pk) is True
    assert dns.lookups == ["127.0.0.1", "127.0.0.1"]
    assert tls_receiver.server_names == [REBIND_NAME]
    (request,) = tls_receiver.received
    assert request["headers"]["Host"] == f"{REBIND_NAME}:{port}"
    # A certificate for another name is refused although the address is the same.
    other = services.webhook_create(
        organisation=tenant.organisation, url=f"https://127.0.0.1:{port}/hook",
        events=["report.finished"], actor="tests",
    )  # fmt: skip
    failing = Delivery.objects.create(webhook=other, event="report.finished", payload={})
    assert services.delivery_attempt(failing.pk) is False
    failing.refresh_from_db()
    # The same text as any other network failure (issue 27): TLS is not told apart.
    assert failing.error == str(services.UNREACHABLE) and len(tls_receiver.received) == 1


# --------------------------------------------------------------------------- hardening (issue 27)
# Webhooks off the analysis path, capped per organisation, one text for every network
# failure, and no IPv6 or port detours to internal services.

LOCAL = {"WEBHOOKS_ALLOW_HTTP": True, "WEBHOOKS_ALLOW_PRIVATE": True,
         "WEBHOOKS_ALLOWED_PORTS": ["*"]}  # fmt: skip


class Blackhole:
    """A loopback port that accepts connections and never answers (a receiver that hangs)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hook"

    def close(self) -> None:
        self.sock.close()


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/hook"  # nothing listens there now: refused


def count_body(survey) -> dict:
    return {"survey": survey.pk, "kind": "distribution", "attribute": "visits"}


@override_settings(**LOCAL)
def test_six_unreachable_webhooks_do_not_hold_up_an_analysis(
    tenant, open_survey, django_capture_on_commit_callbacks
):
    """The job queues its deliveries and finishes; none is attempted in it (they would
    wait WEBHOOKS_TIMEOUT_SECONDS each, with retries: 37.5 s per analysis before)."""
    holes = [Blackhole() for _ in range(6)]
    try:
        for hole in holes:
            services.webhook_create(organisation=tenant.organisation, url=hole.url,
                                    events=["analysis.finished"], actor="t")  # fmt: skip
        with django_capture_on_commit_callbacks(execute=True):
            posted = tenant.analyst.post("/api/v1/analyses/", count_body(open_survey),
                                         format="json")  # fmt: skip
        assert posted.status_code == 202, posted.json()
        job = AnalysisJob.objects.get(pk=posted.json()["id"])
        assert job.status == "succeeded", job.error
        deliveries = Delivery.objects.filter(webhook__organisation=tenant.organisation)
        assert deliveries.count() == 6
        assert {(d.status, d.attempts) for d in deliveries} == {("pending", 0)}
    finally:
        for hole in holes:
            hole.close()


@override_settings(**LOCAL, WEBHOOKS_MAX_PENDING_PER_ORGANISATION=4)
def test_an_organisation_has_at_most_the_cap_of_deliveries_waiting(
    tenant, open_survey, django_capture_on_commit_callbacks
):
    for i in range(6):
        Webhook.objects.create(organisation=tenant.organisation, url=f"http://10.0.0.{i}/",
                               events=["analysis.finished"], secret="s")  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        tenant.analyst.post("/api/v1/analyses/", count_body(open_survey), format="json")
    statuses = sorted(Delivery.objects.values_list("status", flat=True))
    assert statuses == ["failed"] * 2 + ["pending"] * 4
    refused = Delivery.objects.filter(status="failed").first()
    assert refused.attempts == 0
    assert refused.error.startswith("Not sent: 4 deliveries of this organisation")
    german = tenant.analyst.get(
        f"/api/v1/webhooks/{refused.webhook_id}/deliveries/", HTTP_ACCEPT_LANGUAGE="de"
    ).json()[0]["error"]
    assert german != refused.error and "4" in german


@override_settings(**LOCAL, WEBHOOKS_TIMEOUT_SECONDS=1)
def test_every_network_failure_is_stored_with_the_same_text(tenant, receiver):
    """Refused (closed port), timed out (a receiver that never answers) and a TLS
    handshake with a plain-http server: one text, so errors map no ports or services."""
    hole = Blackhole()
    try:
        port = receiver.server_address[1]
        urls = [closed_port_url(), hole.url, f"https://127.0.0.1:{port}/hook"]
        errors = set()
        for url in urls:
            hook = services.webhook_create(organisation=tenant.organisation, url=url,
                                           events=["report.finished"], actor="t")  # fmt: skip
            delivery = Delivery.objects.create(webhook=hook, event="report.finished", payload={})
            assert services.delivery_attempt(delivery.pk) is False
            delivery.refresh_from_db()
            errors.add((delivery.error, str(delivery.error_message)))
        assert errors == {
            ("The receiver could not be reached.", str(services.UNREACHABLE.as_json()))
        }
        polish = tenant.analyst.get(f"/api/v1/webhooks/{hook.pk}/deliveries/?lang=pl").json()[0][
            "error"
        ]
        assert polish != "The receiver could not be reached."
    finally:
        hole.close()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        # NAT64 (RFC 6052) of 127.0.0.1, 169.254.169.254 and 10.0.0.1
        ("https://[64:ff9b::7f00:1]/hook", "(IPv4 127.0.0.1), a private or loopback"),
        ("https://[64:ff9b::a9fe:a9fe]/hook", "(IPv4 169.254.169.254), a private"),
        ("https://[64:ff9b::a00:1]/hook", "(IPv4 10.0.0.1), a private"),
        # 6to4 (RFC 3056) of 127.0.0.1 and 192.168.1.1; IPv4-mapped 10.0.0.1
        ("https://[2002:7f00:1::1]/hook", "(IPv4 127.0.0.1), a private"),
        ("https://[2002:c0a8:101::]/hook", "(IPv4 192.168.1.1), a private"),
        ("https://[::ffff:10.0.0.1]/hook", "(IPv4 10.0.0.1), a private"),
        # Special-purpose ranges: local-use NAT64, IPv4-compatible, site-local, Teredo
        ("https://[64:ff9b:1::808:808]/hook", "special-purpose IPv6 range 64:ff9b:1::/48"),
        ("https://[::808:808]/hook", "special-purpose IPv6 range ::/96"),
        ("https://[fec0::1]/hook", "special-purpose IPv6 range fec0::/10"),
        ("https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook", "a private or loopback"),
        # Ports other than the scheme's standard one
        ("https://93.184.216.34:8443/hook", "standard port 443, got 8443"),
        ("https://93.184.216.34:6379/hook", "standard port 443, got 6379"),
    ],
)
def test_ipv6_forms_of_internal_addresses_and_other_ports_are_refused(tenant, url, message):
    response = tenant.analyst.post(
        "/api/v1/webhooks/", {"url": url, "events": ["report.finished"]}, format="json"
    )
    assert response.status_code == 400, response.json()
    assert message in response.json()["errors"]["url"][0]
    assert not Webhook.objects.exists()
    german = tenant.analyst.post(
        "/api/v1/webhooks/?lang=de", {"url": url, "events": ["report.finished"]}, format="json"
    ).json()["detail"]
    assert german != response.json()["detail"]


@pytest.mark.parametrize(
    "url",
    [
        "https://[64:ff9b::5db8:d822]/hook",  # NAT64 of the public 93.184.216.34
        "https://[2002:5db8:d822::1]/hook",  # its 6to4 form
        "https://93.184.216.34/hook",
    ],
)
def test_public_addresses_in_ipv6_forms_are_accepted(tenant, url):
    response = tenant.analyst.post(
        "/api/v1/webhooks/", {"url": url, "events": ["report.finished"]}, format="json"
    )
    assert response.status_code == 201, response.json()


@override_settings(WEBHOOKS_ALLOWED_PORTS=["8443"])
def test_an_operator_allows_other_ports(tenant):
    allowed = tenant.analyst.post(
        "/api/v1/webhooks/",
        {"url": "https://93.184.216.34:8443/hook", "events": ["report.finished"]},
        format="json",
    )
    assert allowed.status_code == 201, allowed.json()
    other = tenant.analyst.post(
        "/api/v1/webhooks/",
        {"url": "https://93.184.216.34:8444/hook", "events": ["report.finished"]},
        format="json",
    )
    assert other.status_code == 400  # fmt: skip


@pytest.mark.django_db(transaction=True)
@override_settings(**LOCAL, WEBHOOKS_EMBEDDED_SENDER=True, WEBHOOKS_EMBEDDED_POLL_SECONDS=1)
def test_the_embedded_default_sends_queued_deliveries_from_its_own_thread(
    tenant, open_survey, receiver
):
    """Without a broker, a background thread of the process sends what the job queued."""
    services.webhook_create(organisation=tenant.organisation, url=receiver.url,
                            events=["analysis.finished"], actor="t")  # fmt: skip
    posted = tenant.analyst.post("/api/v1/analyses/", count_body(open_survey), format="json")
    assert posted.status_code == 202
    assert AnalysisJob.objects.get(pk=posted.json()["id"]).status == "succeeded"
    deadline = time.monotonic() + 60  # a ceiling against a hang, not a timing
    while not Delivery.objects.filter(status="succeeded").exists():
        assert time.monotonic() < deadline, list(Delivery.objects.values())
        time.sleep(0.05)
    assert len(receiver.received) == 1
    assert any(t.name == "webhook-sender" for t in threading.enumerate())
    sender.stop()
    assert not any(t.name == "webhook-sender" for t in threading.enumerate())
