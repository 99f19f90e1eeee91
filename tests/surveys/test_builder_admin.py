"""The admin survey builder: questions created and edited inline while a draft, validated
with the API's own messages, previewed, frozen once the survey opens."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.contrib.auth.models import Permission, User
from django.utils.html import escape

from consultations.models import AuditEvent, StaffMembership
from consultations.services import consultation_create
from privacy.mechanisms import randomised_response
from surveys.builder import without_mechanism_name
from surveys.models import Question, Survey
from surveys.preview import continuous_margin, discrete_margin
from tests.factories import client_for, key_factory, tenant_factory

pytestmark = pytest.mark.django_db

PREFIX = "questions"


@pytest.fixture
def staff(client):
    User.objects.create_superuser("organiser", "o@example.org", "a-long-passw0rd")
    client.login(username="organiser", password="a-long-passw0rd")
    return client


@pytest.fixture
def consultation():
    organisation = tenant_factory().organisation
    organisation.languages = ["en", "de"]
    organisation.save()
    return consultation_create(organisation=organisation, title="Parks")


def management(total, initial=0):
    return {
        f"{PREFIX}-TOTAL_FORMS": str(total),
        f"{PREFIX}-INITIAL_FORMS": str(initial),
        f"{PREFIX}-MIN_NUM_FORMS": "0",
        f"{PREFIX}-MAX_NUM_FORMS": "1000",
    }


def question_row(index, **fields):
    """One question card as the browser posts it; ``mechanism_params`` and ``translations``
    (the API's JSON, for the tests' reading) become the card's own fields."""
    row = {
        "key": "", "text": "", "type": "binary", "required": "on", "categories": "",
        "range_low": "", "range_high": "", "step": "", "mechanism": "none", "privacy": "custom",
    }  # fmt: skip
    params = json.loads(fields.pop("mechanism_params", "{}"))
    translations = json.loads(fields.pop("translations", "{}"))
    row.update(fields)
    for name, value in params.items():
        row[f"{row['mechanism']}__{name}"] = str(value)
    for code, entry in translations.items():
        row[f"text_{code}"] = entry.get("text", "")
        if "labels" in entry:
            row[f"labels_{code}"] = entry["labels"]
    return {f"{PREFIX}-{index}-{name}": value for name, value in row.items()}


def test_a_draft_survey_is_built_with_its_questions_in_the_admin(staff, consultation):
    data = {
        "consultation": consultation.pk, "kind": "opinion", "title": "Parks survey",
        **management(2),
        **question_row(0, key="sex", text="Sex", type="binary", categories="F\nM",
                       mechanism="randomised_response", mechanism_params='{"retain": 0.75}',
                       translations='{"de": {"text": "Geschlecht", "labels": ["w", "m"]}}'),
        **question_row(1, key="age", type="continuous", range_low="16", range_high="100", step="1",
                       mechanism="additive_uniform", mechanism_params='{"half_width": 10}'),
        "_continue": "1",
    }  # fmt: skip
    response = staff.post("/admin/surveys/survey/add/", data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    survey = Survey.objects.get()
    questions = list(survey.questions.order_by("position"))
    assert [q.key for q in questions] == ["sex", "age"]
    assert questions[0].categories == ["F", "M"] and questions[0].mechanism_params == {
        "retain": 0.75
    }
    assert questions[0].translations["de"]["labels"] == ["w", "m"]
    assert (questions[1].range_low, questions[1].range_high, questions[1].step) == (16, 100, 1)
    assert AuditEvent.objects.filter(action="survey.update", actor="staff:organiser").exists()

    page = staff.get(f"/admin/surveys/survey/{survey.pk}/change/?respondents=400").content.decode()
    assert 'id="mechanism-preview"' in page
    sex = page.split('id="preview-sex"')[1].split('id="preview-age"')[0]
    assert "<td>0.75</td>" in sex and "<td>0.25</td>" in sex
    assert "ε = 1.10" in sex and "3 times as likely" in sex
    assert "at 400 respondents: ±" in sex
    assert "Expected margin of error of the mean at 400 respondents" in page


@pytest.mark.parametrize(
    "row",
    [
        {"key": "sex", "type": "binary", "categories": "F\nM", "mechanism": "negative_uniform"},
        {"key": "site", "type": "nominal", "categories": "A\nB\nC",
         "mechanism": "randomised_response", "mechanism_params": '{"retain": 0.3}'},
        {"key": "sex", "type": "binary", "categories": "F\nM", "mechanism": "none",
         "translations": '{"pl": {"text": "Płeć", "labels": ["K", "M"]}}'},
        {"key": "sex", "type": "binary", "categories": "F\nM", "mechanism": "none",
         "translations": '{"de": {"text": "G", "labels": ["w"]}}'},
        {"key": "9bad", "type": "binary", "categories": "F\nM", "mechanism": "none"},
        {"key": "age", "type": "continuous", "range_low": "50", "range_high": "10",
         "mechanism": "none"},
        {"key": "site", "type": "nominal", "categories": "A\nA\nB", "mechanism": "none"},
        {"key": "site", "type": "nominal", "categories": "A\nB\nC\nD",
         "mechanism": "randomised_response", "mechanism_params": '{"retain": 0.2}'},
        {"key": "site", "type": "ordinal", "categories": "A\nB\nC\nD",
         "mechanism": "negative_gaussian", "mechanism_params": '{"sigma": -1}'},
        {"key": "age", "type": "continuous", "range_low": "0", "range_high": "10",
         "mechanism": "additive_uniform", "mechanism_params": '{"half_width": 1e6}'},
    ],
    ids=["negative-binary", "singular-rr", "foreign-language", "missing-label", "bad-key",
         "empty-range", "duplicate-label", "rr-below-chance", "negative-sigma", "huge-noise"],
)  # fmt: skip
def test_the_builder_refuses_what_the_api_refuses_with_the_same_messages(staff, consultation, row):
    data = {"consultation": consultation.pk, "kind": "opinion", "title": "T",
            **management(1), **question_row(0, **row)}  # fmt: skip
    response = staff.post("/admin/surveys/survey/add/", data)
    assert response.status_code == 200  # the form again, with the errors
    assert not Survey.objects.exists() and not Question.objects.exists()
    page = response.content.decode()
    # The API, given the same question, refuses it with the same messages.
    api_question = {"key": row["key"], "type": row["type"],
                    "mechanism": {"name": row["mechanism"],
                                  **json.loads(row.get("mechanism_params", "{}"))}}  # fmt: skip
    if row["type"] == "continuous":
        api_question["range"] = [float(row["range_low"]), float(row["range_high"])]
    else:
        api_question["categories"] = row["categories"].split("\n")
    if "translations" in row:
        api_question["translations"] = json.loads(row["translations"])
    _key, secret = key_factory(consultation.organisation, "analyst")
    api = client_for(secret).post(
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "opinion", "title": "T",
         "questions": [api_question]},
        format="json",
    )  # fmt: skip
    assert api.status_code == 400
    (problems,) = api.json()["errors"]["questions"]
    messages = [m for field in problems.values() for m in field]
    assert messages
    for message in messages:  # beside the card's mechanism, without the API's name for it
        assert escape(without_mechanism_name(message)) in page, message


def test_questions_are_frozen_once_the_survey_opens(staff, consultation):
    data = {"consultation": consultation.pk, "kind": "opinion", "title": "T", **management(1),
            **question_row(0, key="sex", categories="F\nM"), "_continue": "1"}  # fmt: skip
    assert staff.post("/admin/surveys/survey/add/", data).status_code == 302
    survey = Survey.objects.get()
    from surveys.services import survey_open

    survey_open(survey=survey)
    page = staff.get(f"/admin/surveys/survey/{survey.pk}/change/").content.decode()
    assert f'name="{PREFIX}-0-key"' not in page  # no editable question fields
    assert "sex" in page
    changed = {"title": "T2", **management(1, 1), **question_row(0, key="other", categories="A\nB")}
    staff.post(f"/admin/surveys/survey/{survey.pk}/change/", changed)
    assert list(survey.questions.values_list("key", flat=True)) == ["sex"]


def test_margins_shrink_with_respondents_and_grow_with_noise():
    channel = randomised_response(2, 0.75)
    assert discrete_margin(channel, 1000) == pytest.approx(discrete_margin(channel, 250) / 2)
    # Exact: pi_hat = (lambda_hat - 0.25) / 0.5, Var(lambda_hat) = 0.25 / n at uniform truth.
    assert discrete_margin(channel, 1000) == pytest.approx(1.959964 * np.sqrt(0.25 / 1000) / 0.5)
    assert discrete_margin(np.eye(2), 1000) < discrete_margin(channel, 1000)
    quiet = continuous_margin(0, 100, "additive_uniform", {"half_width": 1}, 400)
    noisy = continuous_margin(0, 100, "additive_uniform", {"half_width": 50}, 400)
    assert noisy > quiet


def test_the_staircase_preview_states_its_epsilon_and_a_tighter_margin_than_laplace():
    # additive_staircase with sensitivity covering the range is eps-LDP: the preview says
    # so in words, and its margin is below Laplace's at the same guarantee (scale 70/eps).
    from surveys import schemes
    from surveys.builder import epsilon_words
    from surveys.preview import preview

    params = {"epsilon": 4.0, "sensitivity": 70.0}
    spec = schemes.QuestionSpec(
        key="age", text="Age", type="continuous", required=True, categories=(),
        range=(16.0, 86.0), mechanism="additive_staircase", params=params,
    )  # fmt: skip
    shown = preview(spec, 1000)
    assert shown.epsilon == 4.0
    assert "4.00" in epsilon_words(shown.epsilon, "additive_staircase", False)
    staircase = continuous_margin(16, 86, "additive_staircase", params, 1000)
    laplace = continuous_margin(16, 86, "additive_laplace", {"scale": 70 / 4}, 1000)
    assert staircase < 0.9 * laplace  # 1.72 against 1.98 (the range's own spread in both)
    narrow = {"epsilon": 4.0, "sensitivity": 30.0}  # does not cover the range: no eps
    assert schemes.continuous_epsilon("additive_staircase", narrow, (16.0, 86.0)) is None


# --------------------------------------------------------------------------- live preview

PREVIEW = "/admin/surveys/survey/preview/"
CARD_LABELS = {"Privacy mechanism", "Translations", "Range", "Categories", "Key"}
QUESTION_FIELDS = {
    "key",
    "text",
    "type",
    "categories",
    "range",
    "step",
    "mechanism",
    "translations",
}


def test_the_live_preview_follows_unsaved_values(staff, consultation):
    data = {"consultation": consultation.pk, "respondents": "400", **management(2),
            **question_row(0, key="sex", text="Sex", categories="F\nM",
                           mechanism="randomised_response", mechanism_params='{"retain": 0.9}'),
            **question_row(1, key="age", type="continuous", range_low="16", range_high="100",
                           mechanism="additive_uniform", mechanism_params='{"half_width": 10}'),
            }  # fmt: skip
    response = staff.post(PREVIEW, data)
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["respondents"] == 400
    sex, age = body["previews"]
    assert sex["rows"] == [["F", [0.9, 0.1]], ["M", [0.1, 0.9]]]
    assert "ε = 2.20" in sex["epsilon"] and "at 400 respondents" in sex["margin"]
    assert "of the mean at 400 respondents" in age["margin"]
    assert "<td>0.90</td>" in body["html"] and 'id="preview-age"' in body["html"]
    assert (
        not Survey.objects.exists()
        and not AuditEvent.objects.filter(action__startswith="survey.").exists()
    )  # nothing saved


@pytest.mark.parametrize(
    "row",
    [
        {"key": "site", "type": "nominal", "categories": "A\nB\nC",
         "mechanism": "randomised_response", "mechanism_params": '{"retain": 0.3}'},
        {"key": "sex", "type": "binary", "categories": "F\nM", "mechanism": "none",
         "translations": '{"pl": {"text": "Płeć", "labels": ["K", "M"]}}'},
        {"key": "age", "type": "continuous", "range_low": "50", "range_high": "10",
         "mechanism": "none"},
    ],
    ids=["singular-rr", "foreign-language", "empty-range"],
)  # fmt: skip
def test_the_live_preview_shows_the_messages_saving_would_show(staff, consultation, row):
    data = {"consultation": consultation.pk, **management(1), **question_row(0, **row)}
    (item,) = staff.post(PREVIEW, data).json()["previews"]
    saved = staff.post(
        "/admin/surveys/survey/add/",
        {"consultation": consultation.pk, "kind": "opinion", "title": "T", **data},
    ).content.decode()
    assert item["error"]
    for part in item["error"].split("; "):
        field, _colon, message = part.partition(": ")
        # "the card's label: the message", not the API's field or mechanism name
        assert field in CARD_LABELS and field not in QUESTION_FIELDS, part
        assert not message.startswith("randomised_response"), part
        assert escape(message) in saved, (message, item["error"])


OWN_TABLE = ["0.6", "0.3", "0.1", "0.2", "0.6", "0.2", "0.1", "0.3", "0.5"]  # Centre: 0.9


@pytest.mark.parametrize(
    ("language", "sentence"),
    [("en", "Row Centre adds up to 0.9; each row must add up to 1."),
     ("de", "Zeile Centre ergibt zusammen 0,9; jede Zeile muss zusammen 1 ergeben."),
     ("pl", "Wiersz Centre sumuje się do 0,9; każdy wiersz musi sumować się do 1.")],
)  # fmt: skip
def test_an_own_tables_bad_row_is_named_by_its_category_in_the_organisers_language(
    staff, consultation, language, sentence
):
    """The preview and saving say what is wrong with an own table in the organiser's
    words: the row by its category (the engine counts rows from 0: "channel row 2"),
    its total in the language's number format, no API field or mechanism name; on
    saving, beside the grid. The engine's rule decides (privacy.mechanisms.channels)."""
    row = question_row(0, key="site", type="nominal", categories="North\nSouth\nCentre",
                       mechanism="randomised_response", privacy="matrix")  # fmt: skip
    data = {"consultation": consultation.pk, **management(1), **row,
            f"{PREFIX}-0-randomised_response__matrix": OWN_TABLE}  # fmt: skip
    (item,) = staff.post(PREVIEW, data, HTTP_ACCEPT_LANGUAGE=language).json()["previews"]
    assert item["error"] == sentence, item["error"]
    saved = staff.post(
        "/admin/surveys/survey/add/",
        {"consultation": consultation.pk, "kind": "opinion", "title": "T", **data},
        HTTP_ACCEPT_LANGUAGE=language,
    ).content.decode()
    grid = saved.split("field-randomised_response__matrix")[1][:1500]
    assert escape(sentence) in grid, grid
    assert "channel row" not in saved and "des Kanals" not in saved and "mechanism: " not in saved
    assert not Survey.objects.exists()
    # A table whose rows add up to 1 (to 1e-9, the engine's tolerance) has no message.
    good = [*OWN_TABLE[:8], "0.6"]
    data[f"{PREFIX}-0-randomised_response__matrix"] = good
    (item,) = staff.post(PREVIEW, data, HTTP_ACCEPT_LANGUAGE=language).json()["previews"]
    assert not item.get("error") and item["rows"][2][1] == [0.1, 0.3, 0.6], item


def test_the_live_preview_is_for_staff_of_the_organisation_only(client, consultation):
    data = {"consultation": consultation.pk, **management(1),
            **question_row(0, key="sex", categories="F\nM")}  # fmt: skip
    anonymous = client.post(PREVIEW, data)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous["Location"]
    User.objects.create_user("resident", "r@example.org", "a-long-passw0rd")
    client.login(username="resident", password="a-long-passw0rd")
    assert client.post(PREVIEW, data).status_code == 302  # not staff
    other = tenant_factory().organisation
    staff_user = User.objects.create_user(
        "clerk", "c@example.org", "a-long-passw0rd", is_staff=True
    )
    staff_user.user_permissions.add(
        *Permission.objects.filter(codename__in=["add_survey", "change_survey", "view_survey"])
    )
    StaffMembership.objects.create(user=staff_user, organisation=other)
    client.login(username="clerk", password="a-long-passw0rd")
    assert client.post(PREVIEW, data).status_code == 404  # another council's consultation
    survey = Survey.objects.create(consultation=consultation, kind="opinion", title="Theirs")
    assert (
        client.post(PREVIEW, {**data, "consultation": "", "survey": survey.pk}).status_code == 404
    )
    StaffMembership.objects.create(user=staff_user, organisation=consultation.organisation)
    response = client.post(PREVIEW, data)
    assert response.status_code == 200 and response.json()["previews"][0]["key"] == "sex"
    assert client.get(PREVIEW).status_code == 405


def test_duplicate_keys_are_refused_by_the_builder_with_the_apis_message(staff, consultation):
    """Two questions with one key: the formset's clean refuses them (no save, no database
    error) with the very message the API gives for the same list."""
    rows = [
        {"key": "sex", "type": "binary", "categories": "F\nM", "mechanism": "none"},
        {"key": "sex", "type": "nominal", "categories": "A\nB\nC", "mechanism": "none"},
    ]
    data = {"consultation": consultation.pk, "kind": "opinion", "title": "T", **management(2),
            **question_row(0, **rows[0]), **question_row(1, **rows[1])}  # fmt: skip
    response = staff.post("/admin/surveys/survey/add/", data)
    assert response.status_code == 200  # the form again, with the errors
    assert not Survey.objects.exists() and not Question.objects.exists()
    page = response.content.decode()
    _key, secret = key_factory(consultation.organisation, "analyst")
    api = client_for(secret).post(
        "/api/v1/surveys/",
        {"consultation": consultation.pk, "kind": "opinion", "title": "T",
         "questions": [{"key": row["key"], "type": row["type"],
                        "categories": row["categories"].split("\n"),
                        "mechanism": {"name": "none"}} for row in rows]},
        format="json",
    )  # fmt: skip
    assert api.status_code == 400
    first, second = api.json()["errors"]["questions"]
    assert first == {} and second["key"] == ["Duplicate key 'sex': question 0 has it."]
    assert escape(second["key"][0]) in page
    assert "Please correct the duplicate data" not in page
    # The same in German, from the admin and from the API.
    german_page = staff.post(
        "/admin/surveys/survey/add/", data, HTTP_ACCEPT_LANGUAGE="de"
    ).content.decode()
    assert escape("Doppelter Schlüssel 'sex': Frage 0 hat ihn bereits.") in german_page


def test_editing_keys_of_a_draft_is_judged_on_the_whole_list(staff, consultation):
    """Swapping two keys is valid (the list has no duplicate); renaming one onto another
    is refused with the API's message, not Django's "already exists"."""
    data = {"consultation": consultation.pk, "kind": "opinion", "title": "T", **management(2),
            **question_row(0, key="a", categories="F\nM"),
            **question_row(1, key="b", categories="F\nM"), "_continue": "1"}  # fmt: skip
    assert staff.post("/admin/surveys/survey/add/", data).status_code == 302
    survey = Survey.objects.get()
    first, second = survey.questions.order_by("position")

    def change(key_a, key_b):
        rows = {
            **question_row(0, key=key_a, categories="F\nM", id=str(first.pk),
                           survey=str(survey.pk)),
            **question_row(1, key=key_b, categories="F\nM", id=str(second.pk),
                           survey=str(survey.pk)),
        }  # fmt: skip
        return staff.post(
            f"/admin/surveys/survey/{survey.pk}/change/",
            {"title": "T", **management(2, 2), **rows, "_continue": "1"},
        )

    clash = change("a", "a")
    assert clash.status_code == 200
    page = clash.content.decode()
    assert escape("Duplicate key 'a': question 0 has it.") in page
    assert "already exists" not in page and "duplicate data" not in page
    assert list(survey.questions.order_by("position").values_list("key", flat=True)) == ["a", "b"]
    swapped = change("b", "a")
    assert swapped.status_code == 302, swapped.content.decode()[-2000:]
    assert list(survey.questions.order_by("position").values_list("key", flat=True)) == ["b", "a"]


# --------------------------------------------------------------------------- cards (issue 32)


def test_the_builder_has_no_json_box_and_lists_mechanisms_in_plain_words(staff, consultation):
    page = staff.get("/admin/surveys/survey/add/").content.decode()
    assert "<textarea" not in page and "mechanism_params" not in page
    options = page.split('name="questions-0-mechanism"')[1].split("</select>")[0]
    # Randomised response first and chosen; labels, not raw names.
    first = options.split("<option")[1]
    assert 'value="randomised_response"' in first and "selected" in first
    assert ">Randomised response<" in first and ">additive_gaussian<" not in options
    assert 'name="questions-0-privacy"' in page and 'value="strong"' in page
    german = staff.get("/admin/surveys/survey/add/?lang=de", HTTP_ACCEPT_LANGUAGE="de")
    assert "Datenschutzverfahren" in german.content.decode()
    assert ">Meinung: was sie denken<" in german.content.decode()  # the survey's kind


def test_a_privacy_preset_sets_the_mechanisms_parameters(staff, consultation):
    data = {
        "consultation": consultation.pk, "kind": "opinion", "title": "Presets", **management(2),
        **question_row(0, key="site", type="nominal", categories="A\nB\nC",
                       mechanism="randomised_response", privacy="strong"),
        **question_row(1, key="age", type="continuous", range_low="16", range_high="100",
                       mechanism="additive_laplace", privacy="balanced"),
        "_continue": "1",
    }  # fmt: skip
    response = staff.post("/admin/surveys/survey/add/", data)
    assert response.status_code == 302, response.content.decode()[-3000:]
    site, age = Survey.objects.get().questions.order_by("position")
    # strong: eps = 1, so retain = e / (e + k - 1) over k = 3 categories.
    assert site.mechanism_params["retain"] == pytest.approx(np.e / (np.e + 2), abs=1e-4)
    # balanced: eps = 2 over the range's width 84: scale 42.
    assert age.mechanism_params == {"scale": 42.0}
    page = staff.get(f"/admin/surveys/survey/{site.survey_id}/change/").content.decode()
    # The card reads the preset back; Laplace says what protects the resident, with eps.
    assert 'value="strong" selected' in page
    assert "What protects the resident" in page and "ε = 2.00" in page


def test_an_open_surveys_questions_read_as_cards_not_json(staff, consultation):
    data = {"consultation": consultation.pk, "kind": "opinion", "title": "T", **management(1),
            **question_row(0, key="site", type="nominal", categories="North\nSouth\nCentre",
                           mechanism="negative_uniform",
                           translations='{"de": {"text": "Ort", "labels": ["N", "S", "M"]}}'),
            "_continue": "1"}  # fmt: skip
    assert staff.post("/admin/surveys/survey/add/", data).status_code == 302
    survey = Survey.objects.get()
    from surveys.services import survey_open

    survey_open(survey=survey)
    page = staff.get(f"/admin/surveys/survey/{survey.pk}/change/").content.decode()
    card = page.split('id="card-site"')[1].split("</article>")[0]
    assert "<li>North</li>" in card and "Negative survey (uniform)" in card
    assert "Ort" in card and "[&quot;" not in card and "{" not in card
    # Negative surveys say what protects the resident (no bounded eps).
    assert "What protects the resident" in page


# --------------------------------------------------------------------- ask again (issue 28)


def test_a_draft_card_asks_an_earlier_question_again_keeping_the_answer(staff, consultation):
    """The card's "Ask again (same answer kept)" lists the consultation's earlier
    questions; choosing one stores the question with ``reuse`` and the earlier question's
    categories and mechanism, whatever the card had typed."""
    from tests.factories import survey_factory

    sex = {"key": "sex", "text": "Sex", "type": "nominal", "categories": ["F", "M", "X"],
           "mechanism": {"name": "randomised_response", "retain": 0.7}}  # fmt: skip
    earlier = survey_factory(consultation, questions=[sex], title="Before")
    draft = survey_factory(
        consultation, kind="opinion", title="After", open_it=False,
        questions=[{"key": "sex_again", "type": "binary", "categories": ["a", "b"],
                    "mechanism": {"name": "none"}}],
    )  # fmt: skip
    question = draft.questions.get()
    url = f"/admin/surveys/survey/{draft.pk}/change/"
    page = staff.get(url).content.decode()
    select = page.split('name="questions-0-ask_again"')[1].split("</select>")[0]
    assert f'value="{earlier.pk}:sex"' in select and "Before · Sex" in select
    assert "Ask again (same answer kept)" in page
    # Each option carries what it sets, so the card shows it and greys those fields out.
    option = (
        select.split(f'value="{earlier.pk}:sex"')[0].rsplit("<option", 1)[1]
        + select.split(f'value="{earlier.pk}:sex"')[1].split(">")[0]
    )
    assert 'data-type="nominal"' in option and 'data-mechanism="randomised_response"' in option
    assert 'data-categories="[&quot;F&quot;, &quot;M&quot;, &quot;X&quot;]"' in option
    assert "The greyed-out fields come from the question asked again" in select

    def post(choice, **typed):
        typed = {"categories": "a\nb", **typed}
        row = question_row(0, key="sex_again", text="Sex again", id=str(question.pk),
                           survey=str(draft.pk), ask_again=choice, **typed)  # fmt: skip
        return staff.post(url, {"title": "After", **management(1, 1), **row, "_continue": "1"})

    tampered = post("999999:sex")  # not an earlier question: the form says so, nothing saved
    assert tampered.status_code == 200 and "errorlist" in tampered.content.decode()
    assert draft.questions.get().reuse is None

    response = post(f"{earlier.pk}:sex")
    assert response.status_code == 302, response.content.decode()[-3000:]
    stored = draft.questions.get()
    assert stored.key == "sex_again" and stored.text == "Sex again"
    assert stored.reuse == {"survey": earlier.pk, "question": "sex"}
    assert stored.type == "nominal" and stored.categories == ["F", "M", "X"]
    assert stored.mechanism == "randomised_response"
    assert stored.mechanism_params == {"retain": 0.7}
    # The card reads it back chosen.
    page = staff.get(url).content.decode()
    assert f'value="{earlier.pk}:sex" selected' in page

    # A reuse the services refuse (here: its earlier question is gone) shows on the form
    # with the API's message; nothing is saved and nothing crashes.
    Question.objects.filter(pk=stored.pk).update(reuse={"survey": 999999, "question": "sex"})
    question = stored
    refused = post("", type="nominal", categories="F\nM\nX", mechanism="randomised_response",
                   mechanism_params='{"retain": 0.7}')  # fmt: skip
    assert refused.status_code == 200, refused.status_code
    error = refused.content.decode().split('id="id_questions-0-ask_again_error"')[1][:300]
    assert "Survey 999999 is not a survey of this consultation" in error
    assert draft.questions.get().reuse == {"survey": 999999, "question": "sex"}


def test_the_add_page_offers_nothing_to_ask_again_and_says_why(staff, consultation):
    page = staff.get("/admin/surveys/survey/add/").content.decode()
    select = page.split('name="questions-0-ask_again"')[1].split("</select>")[0]
    assert select.count("<option") == 1  # "No: a new question"
    assert "A new survey lists nothing here: save it first." in page


# ------------------------------------------------------------- own table (issue 32 leftover)


def test_a_randomised_response_with_its_own_table_is_built_without_json(staff, consultation):
    """Privacy "own table" gives randomised response a full channel (the API's ``matrix``)
    as a grid of chances, row by row; it reads back as the grid, and a row that does not
    add up to 1 is refused, named by its category, nothing saved."""
    matrix = [["0.6", "0.3", "0.1"], ["0.2", "0.6", "0.2"], ["0.1", "0,3", "0.6"]]  # 0,3: de
    cells = [cell for row in matrix for cell in row]

    def post(cells):
        data = {"consultation": consultation.pk, "kind": "opinion", "title": "Table",
                **management(1),
                **question_row(0, key="site", type="ordinal", categories="A\nB\nC",
                               mechanism="randomised_response", privacy="matrix"),
                "questions-0-randomised_response__matrix": cells,
                "questions-0-randomised_response__retain": "0.9",  # custom's field: ignored
                "_continue": "1"}  # fmt: skip
        return staff.post("/admin/surveys/survey/add/", data)

    refused = post([*cells[:-1], "0.5"])  # the last row adds up to 0.9
    assert refused.status_code == 200 and not Survey.objects.exists()
    # In the card's words (the engine's rule): "Row C", not "channel row 2 sums to 0.9".
    assert "Row C adds up to 0.9" in refused.content.decode(), refused.content.decode()[-3000:]
    incomplete = post([*cells[:-1], ""])
    assert "Fill in every cell of the table" in incomplete.content.decode()
    assert not Survey.objects.exists()

    response = post(cells)
    assert response.status_code == 302, response.content.decode()[-3000:]
    site = Survey.objects.get().questions.get()
    assert site.mechanism_params == {"matrix": [[0.6, 0.3, 0.1], [0.2, 0.6, 0.2], [0.1, 0.3, 0.6]]}
    page = staff.get(f"/admin/surveys/survey/{site.survey_id}/change/").content.decode()
    assert 'value="matrix" selected' in page
    grid = page.split('class="matrix-editor"')[1].split("</table>")[0]
    assert grid.count('<input type="number" name="questions-0-randomised_response__matrix"') == 9
    assert 'value="0.3"' in grid and 'value="0.6"' in grid
    # The preview's sentence is the table's, not "kept the true answer with probability".
    assert "published table of probabilities" in page
    # The same question asked in the API's JSON is what the card made.
    assert "[[" not in page.split('id="questions-group"')[1].split('id="mechanism-preview"')[0]
