from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from consultations.models import ApiKey, Organisation
from consultations.services import api_key_create


class Command(BaseCommand):
    help = "Create a portal or analyst API key; the key is printed once and never stored."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--organisation", required=True, help="organisation slug")
        parser.add_argument("--role", required=True, choices=ApiKey.Role.values)
        parser.add_argument("--name", default="", help="what the key is for")
        parser.add_argument("--expires-in-days", type=int, default=None)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            organisation = Organisation.objects.get(slug=options["organisation"])
        except Organisation.DoesNotExist:
            raise CommandError(f"No organisation with slug {options['organisation']!r}") from None
        days = options["expires_in_days"]
        if days is not None and days <= 0:
            raise CommandError("--expires-in-days must be positive")
        issued = api_key_create(
            organisation=organisation,
            role=options["role"],
            name=options["name"],
            expires_at=timezone.now() + timedelta(days=days) if days else None,
            actor="manage.py",
        )
        self.stdout.write(
            f"Created {issued.api_key.role} key {issued.api_key.prefix} for {organisation.slug}"
            + (
                f", expires {issued.api_key.expires_at:%Y-%m-%d}"
                if issued.api_key.expires_at
                else ""
            )
        )
        self.stdout.write("Key (shown once, store it now):")
        self.stdout.write(issued.key)
