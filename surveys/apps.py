from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class SurveysConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "surveys"
    verbose_name = _("Surveys")

    def ready(self) -> None:
        from consultations.origins import set_survey_owner

        def survey_owner(survey_id: int) -> int | None:
            from surveys.models import Survey

            owner = (
                Survey.objects.filter(pk=survey_id)
                .values_list("consultation__organisation_id", flat=True)
                .first()
            )
            return None if owner is None else int(owner)

        # CORS: a survey's paths answer the origins of the survey's organisation only.
        set_survey_owner(survey_owner)
