from django.apps import AppConfig


class ReconstructionConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reconstruction"
