from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ReconstructionConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reconstruction"
    verbose_name = _("Reconstruction")
