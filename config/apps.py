from django.apps import AppConfig
from django.contrib.admin.apps import AdminConfig


class StaffAdminConfig(AdminConfig):
    """Django's admin with the staff sign-in of config/signin.py (TOTP, optional SSO)."""

    default_site = "config.signin.StaffAdminSite"


class ConfigConfig(AppConfig):
    """The project's own app, above every domain app: commands that span them (``demo``)."""

    name = "config"
    label = "project"
    verbose_name = "Project"

    def ready(self) -> None:
        # The surveys app imports no sibling: a purge announces itself to the webhooks here.
        from surveys import retention
        from webhooks.events import survey_purged

        retention.listen(survey_purged)
