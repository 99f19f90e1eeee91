"""Staff sign-in (issue 27): a TOTP second factor (django-otp) and, optionally, OpenID
Connect single sign-on (mozilla-django-oidc), both configured by environment.

Second factor (``ADMIN_2FA``):

- ``superusers`` (the default): a superuser signs in to the admin with password and a
  TOTP code; a staff member who has enrolled a device must give a code too, one without
  signs in with the password alone (optional for staff);
- ``staff``: every staff member needs a code;
- ``off``: codes only for those who enrolled a device.

A device is enrolled with ``python manage.py add_totp_device USERNAME`` (prints the
``otpauth://`` URL for the authenticator app) or in the admin under OTP_TOTP.

Single sign-on (``OIDC_RP_CLIENT_ID`` set, see :mod:`config.oidc`): the admin's sign-in
page links to the identity provider; a session signed in there counts as having passed
the second factor when ``OIDC_TRUSTED_MFA`` is on (the provider enforces it), else the
admin asks for the TOTP code of the account as above.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest
from django_otp import devices_for_user, user_has_device
from django_otp.admin import OTPAdminAuthenticationForm

OIDC_SESSION_FLAG = "signed_in_with_oidc"


def second_factor_required(user: Any) -> bool:
    """Whether ``user`` must give a TOTP code to reach the admin."""
    if not getattr(user, "is_authenticated", False):
        return False
    policy = str(getattr(settings, "ADMIN_2FA", "superusers"))
    if user_has_device(user, confirmed=True):
        return True
    if policy == "staff":
        return bool(user.is_staff or user.is_superuser)
    if policy == "superusers":
        return bool(user.is_superuser)
    return False


class StaffAuthenticationForm(OTPAdminAuthenticationForm):
    """The admin's sign-in form: username, password and, when required, a TOTP code."""

    def clean_otp(self, user: Any) -> None:
        if second_factor_required(user):
            super().clean_otp(user)

    def _chosen_device(self, user: Any) -> Any:
        """The device picked on the form, else the account's only confirmed device (the
        usual case: one authenticator app), so the code alone suffices."""
        device = super()._chosen_device(user)
        if device is None:
            devices = list(devices_for_user(user, confirmed=True))
            if len(devices) == 1:
                device = devices[0]
        return device


class StaffAdminSite(admin.AdminSite):
    """The admin site: staff, and the second factor when :func:`second_factor_required`."""

    login_form = StaffAuthenticationForm
    login_template = "admin/signin.html"

    def has_permission(self, request: HttpRequest) -> bool:
        if not super().has_permission(request):
            return False
        user: Any = request.user
        if not second_factor_required(user):
            return True
        if getattr(user, "is_verified", lambda: False)():
            return True
        return bool(
            getattr(settings, "OIDC_TRUSTED_MFA", False) and request.session.get(OIDC_SESSION_FLAG)
        )

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        context = super().each_context(request)
        context["oidc_enabled"] = bool(getattr(settings, "OIDC_ENABLED", False))
        return context
