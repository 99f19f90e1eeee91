"""The survey builder's question card: one form per question, without any JSON.

Categories (and each language's labels) are list editors (one text input per entry,
``surveys/static/surveys/builder_cards.js`` adds, removes and reorders them); privacy is
chosen in plain words ("strong / balanced / light", which set the chosen mechanism's
parameters from its descriptor's presets, or "custom" with the mechanism's own fields);
each of the organisation's languages has its own text and labels. :meth:`QuestionForm.as_api`
turns a card into the API's question JSON, so the services validate it exactly as they
validate the API.
"""

from __future__ import annotations

import math
from typing import Any

from django import forms
from django.conf import settings
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from core.i18n import number
from core.messages import translate
from privacy.mechanisms.channels import validate_channel
from privacy.mechanisms.descriptors import CONTINUOUS, DISCRETE, PRESET_EPSILON, Mechanism
from privacy.mechanisms.messages import InputError
from surveys.builder_reuse import AskAgainField, ask_again
from surveys.models import Question

DEFAULT_MECHANISM = {"discrete": "randomised_response", "continuous": "additive_laplace"}
DEFAULT_LEVEL = "balanced"
LEVELS = (
    ("strong", _("Strong: residents are well hidden, estimates need more respondents")),
    ("balanced", _("Balanced")),
    ("light", _("Light: more precise estimates, residents less hidden")),
    ("custom", _("Custom: set the mechanism's own parameters")),
    # Mechanisms that take a full channel (randomised response's ``matrix``) only.
    ("matrix", _("Own table: the chance of each reported answer for each true answer")),
)
MATRIX = "matrix"
# Builder options that engineer `budget`'s issue adds beside privacy (e.g. "ask again,
# same answer kept"): declare them on QuestionForm and list their names here, and they
# join the card's privacy box.
PRIVACY_OPTIONS: tuple[str, ...] = ("ask_again",)
ASK_AGAIN_HELP = _(
    "Ask a question of an earlier survey of this consultation again: each resident's device "
    "sends the same scrambled answer as then, so it uses none of their privacy budget. The "
    "question then takes that question's type, categories and mechanism (their fields are "
    "greyed out). A new survey lists nothing here: save it first."
)


def mechanism_menu() -> list[tuple[str, Mechanism, tuple[str, ...]]]:
    """Every mechanism once, most recommended first: (name, descriptor, families)."""
    names: dict[str, tuple[Mechanism, list[str]]] = {}
    for family, table in (("discrete", DISCRETE), ("continuous", CONTINUOUS)):
        for name, mechanism in table.items():
            entry = names.setdefault(name, (mechanism, []))
            entry[1].append(family)
    ordered = sorted(names.items(), key=lambda item: (item[1][0].rank, item[0]))
    return [(name, mechanism, tuple(families)) for name, (mechanism, families) in ordered]


def descriptor(name: str, discrete: bool) -> Mechanism | None:
    return (DISCRETE if discrete else CONTINUOUS).get(name)


def param_fields() -> list[tuple[str, Mechanism, str]]:
    """The "custom" fields: (form field name, mechanism, parameter), e.g.
    ``randomised_response__retain``; a full channel ``matrix`` has its own editor
    (:func:`matrix_fields`, the "own table" privacy level)."""
    seen: list[tuple[str, Mechanism, str]] = []
    for name, _mechanism, families in mechanism_menu():
        for family in families:
            mechanism = (DISCRETE if family == "discrete" else CONTINUOUS)[name]
            for param in mechanism.params:
                field = f"{name}__{param}"
                if param != "matrix" and field not in {f for f, _m, _p in seen}:
                    seen.append((field, mechanism, param))
    return seen


def matrix_fields() -> list[tuple[str, Mechanism]]:
    """The table editors: (form field name, mechanism) of each mechanism taking a
    ``matrix``, e.g. ``randomised_response__matrix``."""
    return [
        (f"{name}__{MATRIX}", mechanism)
        for name, mechanism, families in mechanism_menu()
        if "discrete" in families and MATRIX in DISCRETE[name].params
    ]


class MechanismSelect(forms.Select):
    """The mechanism list; each option says which question types it serves, whether it
    has presets and which parameters it takes (the card's script reads them)."""

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        for mechanism_name, mechanism, families in mechanism_menu():
            if mechanism_name == value:
                option["attrs"]["data-families"] = " ".join(families)
                option["attrs"]["data-presets"] = "1" if mechanism.has_presets else ""
                option["attrs"]["data-params"] = " ".join(
                    f"{mechanism_name}__{p}" for p in mechanism.params if p != MATRIX
                )
                if MATRIX in mechanism.params:  # offers the "own table" privacy level
                    option["attrs"]["data-matrix"] = f"{mechanism_name}__{MATRIX}"
        return option


class ListEditor(forms.Widget):
    """A list of short texts as one text input each (same name, in order)."""

    template_name = "admin/surveys/widgets/list_editor.html"

    def __init__(
        self, attrs: dict[str, Any] | None = None, *, rows: int = 2, add_label: Any = ""
    ) -> None:
        super().__init__(attrs)
        self.rows = rows
        self.add_label = add_label

    def value_from_datadict(self, data: Any, files: Any, name: str) -> list[str]:
        values = data.getlist(name) if hasattr(data, "getlist") else data.get(name) or []
        if isinstance(values, str):
            values = [values]
        lines: list[str] = []
        for value in values:
            # One value with line breaks (a pasted list) is one entry per line.
            lines += str(value).splitlines() or [""]
        return lines

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        items = [str(v) for v in value] if isinstance(value, (list, tuple)) else []
        context["widget"]["items"] = items + [""] * max(0, self.rows - len(items))
        context["widget"]["add_label"] = self.add_label
        return context


class MatrixEditor(forms.Widget):
    """A k x k table of chances, one number input per cell (same name, row by row): row i
    is the true answer, column j the reported one. ``surveys/static/surveys/builder_cards.js``
    sizes it to the card's categories, labels its rows and columns with them and checks as
    the organiser types that every row adds up to 1."""

    template_name = "admin/surveys/widgets/matrix_editor.html"

    def value_from_datadict(self, data: Any, files: Any, name: str) -> list[str]:
        values = data.getlist(name) if hasattr(data, "getlist") else data.get(name) or []
        return [values] if isinstance(values, str) else list(values)

    def value_omitted_from_data(self, data: Any, files: Any, name: str) -> bool:
        return name not in data

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        rows: list[list[str]] = []
        if isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple)):
            rows = [[f"{float(v):g}" for v in row] for row in value]  # a stored matrix
        elif isinstance(value, (list, tuple)) and value:  # as posted, row by row
            k = math.isqrt(len(value))
            if k * k == len(value):
                rows = [[str(v) for v in value[i * k : (i + 1) * k]] for i in range(k)]
        context["widget"]["rows"] = rows
        return context


class MatrixField(forms.Field):
    """The cells of a :class:`MatrixEditor` as a list of rows of numbers (``None`` when
    every cell is empty); whether it is a channel (rows adding up to 1, entries of 0 or
    at least 1e-12) is the services' check, with the API's messages."""

    widget = MatrixEditor

    def to_python(self, value: Any) -> list[list[float]] | None:
        cells = [str(v).strip() for v in (value or [])]
        if not any(cells):
            return None
        k = math.isqrt(len(cells))
        if k < 2 or k * k != len(cells):
            raise forms.ValidationError(
                _("The table must have one row and one column per category.")
            )
        if not all(cells):
            raise forms.ValidationError(_("Fill in every cell of the table (0 where never)."))
        try:
            # A chance is below 1: a comma is a decimal comma (de, pl), never thousands.
            numbers = [float(cell.replace(",", ".")) for cell in cells]
        except ValueError:
            raise forms.ValidationError(
                _("Every cell of the table is a chance between 0 and 1, e.g. 0.25.")
            ) from None
        if not all(math.isfinite(v) for v in numbers):
            raise forms.ValidationError(
                _("Every cell of the table is a chance between 0 and 1, e.g. 0.25.")
            )
        return [numbers[i * k : (i + 1) * k] for i in range(k)]


class ListField(forms.Field):
    widget = ListEditor

    def __init__(self, *, keep_blanks: bool = False, **kwargs: Any) -> None:
        self.keep_blanks = keep_blanks
        super().__init__(**kwargs)

    def to_python(self, value: Any) -> list[str]:
        items = [str(v).strip() for v in (value or [])]
        if not self.keep_blanks:
            return [item for item in items if item]
        while items and not items[-1]:
            items.pop()
        return items


def language_name(code: str) -> str:
    return str(dict(settings.LANGUAGES).get(code, code))


def translation_languages(organisation: Any) -> list[str]:
    """The languages a question card offers translations in: the organisation's (every
    site language while none is chosen), without the site's own language."""
    codes = [code for code, _name in settings.LANGUAGES]
    chosen = list(getattr(organisation, "languages", None) or codes) if organisation else codes
    return [code for code in codes if code in chosen and code != settings.LANGUAGE_CODE]


# The engine's refusals of a table (privacy.mechanisms.channels) that the card says in its
# own words: the row named by its category (the engine counts rows from 0), numbers in the
# active language. The grid's live check (builder_cards.js) uses the same sentences.
ROW_TOTAL = "channel row %(row)s sums to %(total)s, not 1"
ROW_CELLS = (
    "channel row %(row)s has a negative entry",
    "channel row %(row)s has a non-finite entry",
)


def _total(total: float) -> str:
    """A row's total in the active language, with the decimals that tell it from 1."""
    places = 3
    while places < 12 and round(total, places) == 1:
        places += 1
    text = number(total, places)
    return text.rstrip("0").rstrip(",.") if any(c in text for c in ",.") else text


def table_problem(matrix: list[list[float]], categories: list[str]) -> str | None:
    """What is wrong with an own table as a channel, by the engine's rule
    (:func:`~privacy.mechanisms.channels.validate_channel`), in the organiser's words."""
    try:
        validate_channel(matrix)
    except InputError as exc:
        template, params = exc.message.template, dict(exc.message.params)
        row = params.get("row")
        if not isinstance(row, int) or not 0 <= row < len(categories):
            return translate(exc)
        if template == ROW_TOTAL:
            return gettext("Row {row} adds up to {total}; each row must add up to 1.").format(
                row=categories[row], total=_total(float(sum(matrix[row])))
            )
        if template in ROW_CELLS:
            return gettext("Row {row}: every cell is a chance between 0 and 1.").format(
                row=categories[row]
            )
        return translate(exc)
    return None


class QuestionForm(forms.ModelForm):
    """One question card (see the module docstring)."""

    languages: tuple[str, ...] = ()  # question_form_for adds the fields of each

    categories = ListField(
        required=False,
        widget=ListEditor(rows=2, add_label=_("Add a category")),
        help_text=_("Discrete questions: the answers to choose from, in order."),
    )
    mechanism = forms.ChoiceField(widget=MechanismSelect)
    privacy = forms.ChoiceField(choices=LEVELS, initial=DEFAULT_LEVEL)
    # Replaced in __init__ by an AskAgainField listing the consultation's earlier questions
    # when the formset knows the survey (not on the add page: nothing to list there).
    ask_again = forms.ChoiceField(required=False, choices=[("", _("No: a new question"))])

    class Meta:
        model = Question
        fields = ["key", "text", "type", "required", "range_low", "range_high", "step"]
        widgets = {"text": forms.TextInput(attrs={"class": "vTextField"})}
        labels = {
            "key": _("Key"), "text": _("Text"), "type": _("Type"), "required": _("Required"),
            "range_low": _("Range low"), "range_high": _("Range high"), "step": _("Step"),
        }  # fmt: skip
        help_texts = {
            "key": _("A short name for analyses and exports, e.g. age or district."),
            "step": _("Continuous questions: e.g. 1 for whole years (optional)."),
        }

    def __init__(
        self, *args: Any, consultation: Any = None, survey: Any = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        if "type" not in self.fields:  # a frozen survey's cards (key only, read-only)
            return
        if consultation is not None:
            self.fields["ask_again"] = AskAgainField(consultation=consultation, survey=survey)
        self.fields["ask_again"].label = _("Ask again (same answer kept)")
        self.fields["ask_again"].help_text = ASK_AGAIN_HELP
        # Shown by the card's script while a question is chosen (it greys those fields).
        self.fields["ask_again"].widget.attrs["data-note"] = gettext(
            "The greyed-out fields come from the question asked again: its type, its "
            "categories or range and its privacy mechanism."
        )
        self.fields["type"].choices = [
            ("binary", _("Yes/no or two answers (binary)")),
            ("nominal", _("Choice among answers (nominal)")),
            ("ordinal", _("Ordered answers (ordinal)")),
            ("continuous", _("A number (continuous)")),
        ]
        self.fields["mechanism"].choices = [
            (name, gettext(mechanism.label)) for name, mechanism, _f in mechanism_menu()
        ]
        self.fields["mechanism"].initial = DEFAULT_MECHANISM["discrete"]
        self.fields["categories"].label = _("Categories")
        self.fields["mechanism"].label = _("Privacy mechanism")
        self.fields["privacy"].label = _("Privacy")
        for field_name, mechanism, param in param_fields():
            self.fields[field_name].label = gettext(mechanism.param_labels.get(param, param))
        for field_name, _mechanism in matrix_fields():
            self.fields[field_name].label = _(
                "Chance of each reported answer (columns) for each true answer (rows)"
            )
            self.fields[field_name].help_text = _(
                "Each row adds up to 1. Keeping the true answer more often (the diagonal) "
                "gives more precise estimates and hides residents less."
            )
        for code in self.languages:
            name = language_name(code)
            self.fields[f"text_{code}"].label = _("Text in %(language)s") % {"language": name}
            self.fields[f"labels_{code}"].label = _("Categories in %(language)s") % {
                "language": name
            }
        if self.instance.pk:
            self._initial_from(self.instance)

    def _initial_from(self, question: Question) -> None:
        self.initial["categories"] = list(question.categories or [])
        self.initial["mechanism"] = question.mechanism
        params = dict(question.mechanism_params or {})
        for name, value in params.items():
            self.initial[f"{question.mechanism}__{name}"] = value
        mechanism = descriptor(question.mechanism, question.is_discrete)
        level = "custom"
        if mechanism is not None and mechanism.has_presets:
            value_range = (
                None if question.is_discrete else (question.range_low, question.range_high)
            )
            for candidate in PRESET_EPSILON:
                if (
                    mechanism.preset(candidate, len(question.categories or []), value_range)
                    == params
                ):  # type: ignore[arg-type]
                    level = candidate
        if MATRIX in params:
            level = MATRIX
        self.initial["privacy"] = level
        if question.reuse:
            self.initial["ask_again"] = f"{question.reuse['survey']}:{question.reuse['question']}"
        for code, entry in (question.translations or {}).items():
            if code in self.languages and isinstance(entry, dict):
                self.initial[f"text_{code}"] = entry.get("text", "")
                self.initial[f"labels_{code}"] = list(entry.get("labels") or [])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        name = data.get("mechanism") or ""
        field = f"{name}__{MATRIX}"
        matrix, categories = data.get(field), list(data.get("categories") or [])
        if data.get("privacy") == MATRIX and matrix is not None and len(matrix) == len(categories):
            problem = table_problem(matrix, categories)
            if problem:
                self.add_error(field, problem)  # beside the grid, not the mechanism
        return data

    def mechanism_params(self) -> dict[str, Any]:
        data = self.cleaned_data
        discrete = data.get("type") != "continuous"
        name = data.get("mechanism") or ""
        mechanism = descriptor(name, discrete)
        if mechanism is None:
            return {}
        if data.get("privacy") == MATRIX and MATRIX in mechanism.params:
            matrix = data.get(f"{name}__{MATRIX}")
            return {} if matrix is None else {MATRIX: matrix}  # the services name a missing one
        if mechanism.has_presets and data.get("privacy", DEFAULT_LEVEL) not in ("custom", MATRIX):
            low, high = data.get("range_low"), data.get("range_high")
            value_range = None if discrete or low is None or high is None else (low, high)
            if not discrete and value_range is None:
                return {}  # the services name the missing range
            return mechanism.preset(
                data.get("privacy") or DEFAULT_LEVEL, len(data.get("categories") or []), value_range
            )
        return {
            param: data[f"{name}__{param}"]
            for param in mechanism.params
            if param != MATRIX and data.get(f"{name}__{param}") is not None
        }

    def as_api(self) -> dict[str, Any]:
        data = self.cleaned_data
        question: dict[str, Any] = {
            "key": data.get("key"),
            "text": data.get("text") or "",
            "type": data.get("type"),
            "required": bool(data.get("required")),
            "mechanism": {"name": data.get("mechanism"), **self.mechanism_params()},
        }
        discrete = data.get("type") != "continuous"
        if not discrete:
            question["range"] = [data.get("range_low"), data.get("range_high")]
            if data.get("step") is not None:
                question["step"] = data["step"]
        else:
            question["categories"] = data.get("categories") or []
            if data.get("step") is not None:  # refused by the services, with the API's message
                question["step"] = data["step"]
        translations: dict[str, Any] = {}
        for code in self.languages:
            text = data.get(f"text_{code}") or ""
            labels = data.get(f"labels_{code}") or []
            if text or (discrete and labels):
                translations[code] = {"text": text, **({"labels": labels} if discrete else {})}
        if translations:
            question["translations"] = translations
        field = self.fields.get("ask_again")
        chosen = data.get("ask_again") or ""
        if isinstance(field, AskAgainField) and chosen:
            return ask_again(question, field.earlier(chosen))
        kept = getattr(self.instance, "reuse", None)
        if kept and not (
            isinstance(field, AskAgainField)
            and f"{kept['survey']}:{kept['question']}" in field.questions
        ):
            # Asked again through the API, of a question this card does not list: kept.
            # (One it lists and the organiser set to "No" is a new question again.)
            question["reuse"] = dict(kept)
        return question


def _card_fields(languages: tuple[str, ...]) -> dict[str, forms.Field]:
    """The card's fields beyond the model's: each mechanism's parameters ("custom") and
    each language's text and labels (labelled per request, in ``QuestionForm.__init__``)."""
    fields: dict[str, forms.Field] = {
        name: forms.FloatField(required=False, localize=True) for name, _m, _p in param_fields()
    }
    for name, _mechanism in matrix_fields():
        fields[name] = MatrixField(required=False)
    for code in languages:
        fields[f"text_{code}"] = forms.CharField(
            required=False,
            max_length=500,
            widget=forms.TextInput(attrs={"class": "vTextField", "lang": code}),
        )
        fields[f"labels_{code}"] = ListField(
            required=False,
            keep_blanks=True,
            widget=ListEditor(rows=0, attrs={"lang": code, "data-labels": "1"}),
        )
    return fields


def question_form_for(organisation: Any) -> type[QuestionForm]:
    """The card form with translation fields for ``organisation``'s languages (every
    site language but the default when ``None``, as on the add page)."""
    languages = tuple(translation_languages(organisation))
    return type(  # a ModelForm's declared fields must exist when the class is made
        "QuestionForm", (QuestionForm,), {"languages": languages, **_card_fields(languages)}
    )


def card_fieldsets(form: type[QuestionForm]) -> list[tuple[Any, dict[str, Any]]]:
    """The card's boxes: the question, its answers, its privacy, its translations."""
    params = [name for name, _m, _p in param_fields()] + [name for name, _m in matrix_fields()]
    sets: list[tuple[Any, dict[str, Any]]] = [
        (None, {"fields": ["key", "text", "type", "required"], "classes": ["card-question"]}),
        (
            _("Answers"),
            {
                "fields": ["categories", ("range_low", "range_high", "step")],
                "classes": ["card-answers"],
            },
        ),
        (
            _("Privacy"),
            {
                "fields": ["mechanism", "privacy", *params, *PRIVACY_OPTIONS],
                "classes": ["card-privacy"],
            },
        ),
    ]
    if form.languages:
        fields = [name for code in form.languages for name in (f"text_{code}", f"labels_{code}")]
        sets.append((_("Translations"), {"fields": fields, "classes": ["card-translations"]}))
    return sets
