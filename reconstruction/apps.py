from collections.abc import Mapping
from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ReconstructionConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reconstruction"
    verbose_name = _("Reconstruction")

    #: The analysis kinds by name (the registry's live mapping), read by
    #: ``AnalysisJob.clean``: the registry imports the models, so they do not import it.
    analysis_kinds: Mapping[str, Any] = {}

    def ready(self) -> None:
        from reconstruction import registry

        self.analysis_kinds = registry.KINDS
