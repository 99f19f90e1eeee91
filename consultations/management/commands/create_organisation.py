from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from consultations.services import organisation_create


class Command(BaseCommand):
    help = "Create an organisation (a local government running consultations)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("slug", help="short identifier, e.g. 'leeds'")
        parser.add_argument("--name", required=True, help="display name")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            organisation = organisation_create(slug=options["slug"], name=options["name"])
        except ValidationError as exc:
            raise CommandError(
                "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())
            )
        self.stdout.write(
            f"Created organisation {organisation.slug} ({organisation.name}), id {organisation.pk}"
        )
