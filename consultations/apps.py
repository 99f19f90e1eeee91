from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class ConsultationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "consultations"
    verbose_name = _("Consultations")

    def ready(self) -> None:
        from corsheaders.signals import check_request_enabled

        from consultations import schema  # noqa: F401  (registers the OpenAPI extension)
        from consultations.origins import cors_allow_listed_origins

        check_request_enabled.connect(cors_allow_listed_origins, dispatch_uid="portal-origins")

        # After django.contrib.admin's ready() loaded every admin module.
        from django.contrib import admin

        from consultations.admin_scoping import scope_admin_site

        scope_admin_site(admin.site)
