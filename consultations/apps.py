from django.apps import AppConfig


class ConsultationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "consultations"

    def ready(self) -> None:
        from consultations import schema  # noqa: F401  (registers the OpenAPI extension)
