"""The example portal page: a template that any portal can copy (issue 6).

The page's JavaScript fetches the survey's
published scheme from the API, distorts the answers in the browser with
the packaged ``clients/js/src/distort.js`` (served at
``/static/privacy/distort.js``) and posts only the distorted answers, using the
portal key configured in ``settings.PORTAL_EXAMPLE_KEY``. The page speaks the resident's
language (``?lang=``, else Accept-Language through LocaleMiddleware) and shows the
questions' translations, while the answers sent stay the category values.

The page hands that key to anyone who opens it, so it is off unless
``PORTAL_EXAMPLE_ENABLED`` is set, and it serves only the open surveys of the key's own
organisation: any other id (a draft, a closed survey, another council's) answers 404.
"""

from __future__ import annotations

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_safe

from consultations.models import ApiKey
from consultations.selectors import api_key_by_secret
from core.i18n import request_language
from surveys.models import Survey
from surveys.selectors import survey_get


def page_messages() -> dict[str, str]:
    """The page script's sentences in the request's language; ``{name}`` placeholders are
    filled in by the script."""
    return {
        "optional": _(" (optional)"),
        "choose_not_true": _("Choose one answer that is NOT true for you."),
        "privacy_level": _(" (privacy level ε = {epsilon})"),
        "none": _("Sent as you give it."),
        "rr_retain": _(
            "Your device sends your real answer {percent} of the time, otherwise another "
            "answer picked at random."
        ),
        "rr_matrix": _("Your device may replace your answer by another one, picked at random."),
        "negative_uniform": _("Your device sends one answer that is NOT yours, picked at random."),
        "negative_gaussian": _(
            "Your device sends one answer that is NOT yours, picked at random (answers close "
            "to yours are more likely)."
        ),
        "negative_manual": _(
            "You pick an answer that is not true for you; your pick is sent as it is."
        ),
        "additive_uniform": _(
            "Your device adds a random amount between -{size} and +{size} to your number."
        ),
        "additive_noise": _(
            "Your device adds random noise to your number (usually within ±{size})."
        ),
        "retention_replacement": _(
            "Your device sends your number {percent} of the time, otherwise a random number "
            "between {low} and {high}."
        ),
        "between": _(" (between {low} and {high})"),
        "please_answer": _("Please answer: {questions}."),
        "thanks": _("Thank you: your scrambled answers were sent under the reference {reference}."),
        "already": _("This browser has already answered this survey."),
        "too_many": _("Too many requests; please try again shortly."),
        "too_many_in": _("Too many requests; please try again in {seconds} seconds."),
        "failed": _("Sending failed: {message}."),
        "no_survey": _("There is no survey with this number for this portal."),
        "not_loaded": _("The questions could not be loaded: {message}."),
        "not_open": _("This survey is not open for answers at the moment."),
        # Issue 28: the resident's privacy budget, in plain words ({numbers} are ε).
        "budget_used": _(
            "You have used {spent} of your privacy budget of {budget} in this consultation. "
            "Sending these answers uses {cost} more, which leaves {left}."
        ),
        "budget_new": _(
            "This consultation lets all its surveys together learn at most {budget} about "
            "you: your privacy budget. This browser has sent nothing of yours yet; sending "
            "these answers uses {cost} of it, which leaves {left}."
        ),
        "budget_over": _(
            "Your privacy budget of {budget} does not cover this survey: you have used "
            "{spent}, and these answers would need {cost}. They cannot be sent."
        ),
        "budget_explained": _(
            "The privacy budget measures how much all the surveys of this consultation may "
            "learn about you together; each scrambled answer uses a little of it."
        ),
        "budget_refused": _(
            "These answers would take you past your privacy budget in this consultation, "
            "so they were not sent."
        ),
        "reused": _(
            "Asked before: your device sends the same scrambled answer as then, so it uses "
            "none of your privacy budget."
        ),
        "reused_differs": _(
            "This survey asks again a question you answered before, and this browser no "
            "longer has the scrambled answer it sent then, so nothing was sent."
        ),
    }


@require_safe  # type: ignore[untyped-decorator]  # no django-stubs
def portal_example(request: HttpRequest, survey_id: int) -> HttpResponse:
    if not getattr(settings, "PORTAL_EXAMPLE_ENABLED", False):
        raise Http404("The example portal page is not enabled (PORTAL_EXAMPLE_ENABLED).")
    key = getattr(settings, "PORTAL_EXAMPLE_KEY", "") or ""
    api_key = api_key_by_secret(key) if key else None
    if api_key is not None and api_key.role != ApiKey.Role.PORTAL:
        api_key = None
    if api_key is not None:
        survey = survey_get(organisation=api_key.organisation, pk=survey_id)
        if survey is None or survey.status != Survey.Status.OPEN:
            raise Http404("No open survey with this id.")
    key = key if api_key is not None else ""
    language = request_language(request)
    with translation.override(language):
        config = {
            "surveyId": survey_id,
            "apiBase": "",
            "key": key,
            "language": language,
            "messages": page_messages(),
        }
        return render(
            request,
            "privacy/portal_example.html",
            {
                "survey_id": survey_id,
                "config": config,
                "configured": bool(key),
                "language": language,
            },
        )
