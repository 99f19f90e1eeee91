"""OpenID Connect single sign-on for staff (mozilla-django-oidc), off unless
``OIDC_RP_CLIENT_ID`` is set (config/settings.py lists the other variables).

The authorisation code flow: ``/oidc/authenticate/`` sends the browser to the provider,
``/oidc/callback/`` takes the code, fetches the tokens and the user's claims, checks the
ID token's signature and nonce, and signs the matching account in (by e-mail; created,
without staff rights, only when ``OIDC_CREATE_USER`` is on). The session is marked as
signed in with the provider (:data:`config.signin.OIDC_SESSION_FLAG`), which counts as the
second factor when ``OIDC_TRUSTED_MFA`` is on. While off, these paths answer 404 and the
backend authenticates nobody.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import (
    OIDCAuthenticationCallbackView,
    OIDCAuthenticationRequestView,
    OIDCLogoutView,
)

from config.signin import OIDC_SESSION_FLAG


def _enabled() -> bool:
    return bool(getattr(settings, "OIDC_ENABLED", False))


class StaffOIDCBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if _enabled():  # the parent reads (and requires) the provider's settings
            super().__init__(*args, **kwargs)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> Any:
        if not _enabled() or request is None:
            return None
        user = super().authenticate(request, **kwargs)
        if user is not None:
            request.session[OIDC_SESSION_FLAG] = True
        return user

    def create_user(self, claims: dict[str, Any]) -> Any:
        user = super().create_user(claims)
        user.is_staff = user.is_superuser = False  # rights are given in the admin
        user.save(update_fields=["is_staff", "is_superuser"])
        return user


def _gated(view: Any) -> Any:
    def gated(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not _enabled():
            raise Http404("Single sign-on is not configured.")
        return view(request, *args, **kwargs)  # type: ignore[no-any-return]

    return gated


authenticate_view = _gated(OIDCAuthenticationRequestView.as_view())
callback_view = _gated(OIDCAuthenticationCallbackView.as_view())
logout_view = _gated(OIDCLogoutView.as_view())
