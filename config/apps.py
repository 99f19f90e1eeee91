from django.apps import AppConfig


class ConfigConfig(AppConfig):
    """The project's own app, above every domain app: commands that span them (``demo``)."""

    name = "config"
    label = "project"
    verbose_name = "Project"
