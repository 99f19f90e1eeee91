"""Staff sign-in (issue 27): a TOTP second factor required for superusers and optional
for staff (ADMIN_2FA), and OpenID Connect single sign-on tested against a local stub
provider (a loopback HTTP server in this file). Fails on the old code: a superuser
signed in with the password alone, and there was no /oidc/ path."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django_otp.oath import TOTP
from django_otp.plugins.otp_totp.models import TOTPDevice

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-passw0rd"


def _user(name: str, *, superuser: bool) -> Any:
    User = get_user_model()
    if superuser:
        return User.objects.create_superuser(name, f"{name}@example.org", PASSWORD)
    user = User.objects.create_user(name, f"{name}@example.org", PASSWORD, is_staff=True)
    return user


def _code(device: TOTPDevice) -> str:
    totp = TOTP(device.bin_key, device.step, device.t0, device.digits, device.drift)
    totp.time = time.time()
    return str(totp.token()).zfill(device.digits)


def _sign_in(username: str, code: str | None = None) -> tuple[Client, Any]:
    client = Client()
    data = {"username": username, "password": PASSWORD, "next": "/admin/"}
    if code is not None:
        data["otp_token"] = code
    response = client.post("/admin/login/?next=/admin/", data)
    return client, response


def _in_admin(client: Client) -> bool:
    return client.get("/admin/").status_code == 200


@pytest.fixture
def policy(settings):
    def set_policy(value: str) -> None:
        settings.ADMIN_2FA = value

    set_policy("superusers")  # the production default
    return set_policy


def test_a_superuser_needs_a_code(policy):
    _user("root", superuser=True)
    client, response = _sign_in("root")
    assert response.status_code == 200 and not _in_admin(client)  # the form again
    out = call_command_output("add_totp_device", "root")
    assert out.startswith("otpauth://totp/")
    device = TOTPDevice.objects.get(user__username="root")
    client, _ = _sign_in("root", "000000" if _code(device) != "000000" else "111111")
    assert not _in_admin(client)
    time.sleep(1.2)  # django-otp throttles a device for 1 s after a wrong code
    client, _ = _sign_in("root", _code(device))
    assert _in_admin(client)


def test_a_password_session_of_a_superuser_is_not_enough(policy):
    root = _user("root", superuser=True)
    client = Client()
    client.force_login(root)  # signed in, second factor not verified
    assert not _in_admin(client)


def test_staff_choose_a_second_factor_unless_the_policy_asks_it_of_everyone(policy):
    officer = _user("officer", superuser=False)
    client, _ = _sign_in("officer")
    assert _in_admin(client)  # optional: no device, password only
    TOTPDevice.objects.create(user=officer, name="phone", confirmed=True)
    client, _ = _sign_in("officer")
    assert not _in_admin(client)  # enrolled: the code is asked for
    client, _ = _sign_in("officer", _code(TOTPDevice.objects.get(user=officer)))
    assert _in_admin(client)
    policy("staff")
    _user("clerk", superuser=False)
    client, _ = _sign_in("clerk")
    assert not _in_admin(client)


def call_command_output(*args: str) -> str:
    import io

    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


# --------------------------------------------------------------------------- OIDC stub

CLIENT_ID, CLIENT_SECRET = "consultations", "stub-client-secret-" + "x" * 20


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _hs256(claims: dict[str, Any]) -> str:
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64(json.dumps(claims).encode())
    mac = hmac.new(CLIENT_SECRET.encode(), f"{header}.{body}".encode(), hashlib.sha256)
    return f"{header}.{body}.{_b64(mac.digest())}"


class StubProvider:
    """A tiny OpenID provider on 127.0.0.1: authorize, token and userinfo endpoints."""

    def __init__(self, email: str) -> None:
        self.email = email
        self.nonces: dict[str, str] = {}
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # the token endpoint
                form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
                code = form["code"][0]
                assert form["client_secret"][0] == CLIENT_SECRET
                claims = {
                    "iss": stub.base, "aud": CLIENT_ID, "sub": "staff-1", "email": stub.email,
                    "nonce": stub.nonces[code], "iat": int(time.time()),
                    "exp": int(time.time()) + 300,
                }  # fmt: skip
                self._json({"id_token": _hs256(claims), "access_token": "at-" + code,
                            "token_type": "Bearer"})  # fmt: skip

            def do_GET(self) -> None:  # userinfo
                self._json({"sub": "staff-1", "email": stub.email})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def authorize(self, url: str) -> tuple[str, str]:
        """What the provider does with the browser: a code for the state, its nonce kept."""
        query = parse_qs(urlsplit(url).query)
        code = f"code-{len(self.nonces)}"
        self.nonces[code] = query["nonce"][0]
        return code, query["state"][0]


@pytest.fixture
def provider(settings):
    stub = StubProvider("officer@example.org")
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_OP_AUTHORIZATION_ENDPOINT = stub.base + "/authorize"
    settings.OIDC_OP_TOKEN_ENDPOINT = stub.base + "/token"
    settings.OIDC_OP_USER_ENDPOINT = stub.base + "/userinfo"
    settings.OIDC_RP_SIGN_ALGO = "HS256"
    settings.OIDC_OP_JWKS_ENDPOINT = None
    yield stub
    stub.server.shutdown()


def _single_sign_on(provider: StubProvider) -> Client:
    client = Client()
    page = client.get("/admin/login/")
    assert b"/oidc/authenticate/" in page.content  # the sign-in page links to it
    start = client.get("/oidc/authenticate/", {"next": "/admin/"})
    assert start.status_code == 302 and start["Location"].startswith(provider.base)
    code, state = provider.authorize(start["Location"])
    done = client.get("/oidc/callback/", {"code": code, "state": state})
    assert done.status_code == 302
    return client


def test_staff_sign_in_with_the_identity_provider(provider, settings):
    settings.ADMIN_2FA = "superusers"
    _user("officer", superuser=False)
    client = _single_sign_on(provider)
    assert _in_admin(client)


def test_single_sign_on_counts_as_second_factor_only_when_trusted(provider, settings):
    settings.ADMIN_2FA = "staff"
    _user("officer", superuser=False)
    settings.OIDC_TRUSTED_MFA = False
    assert not _in_admin(_single_sign_on(provider))
    settings.OIDC_TRUSTED_MFA = True
    assert _in_admin(_single_sign_on(provider))


def test_unknown_accounts_are_not_created_and_sso_is_off_by_default(provider, settings):
    client = _single_sign_on(provider)  # nobody has the e-mail: no account, no session
    assert not _in_admin(client)
    assert not get_user_model().objects.filter(email="officer@example.org").exists()
    settings.OIDC_ENABLED = False
    assert Client().get("/oidc/authenticate/").status_code == 404
    assert b"/oidc/authenticate/" not in Client().get("/admin/login/").content
