"""``python manage.py add_totp_device USERNAME``: enrol a TOTP authenticator for a staff
account (config/signin.py) and print its ``otpauth://`` URL once (scan it, or type the
secret into the authenticator app). ``--replace`` removes the account's other TOTP
devices first."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "Enrol a TOTP device for an admin account and print its otpauth:// URL."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("username")
        parser.add_argument("--name", default="authenticator")
        parser.add_argument("--replace", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        from django_otp.plugins.otp_totp.models import TOTPDevice

        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No account named {options['username']!r}.")
        if options["replace"]:
            TOTPDevice.objects.filter(user=user).delete()
        device = TOTPDevice.objects.create(user=user, name=options["name"], confirmed=True)
        self.stdout.write(device.config_url)
