"""Pure-layer messages in the request's language (the kernel: imports no app).

The pure maths raises :class:`privacy.mechanisms.messages.InputError` carrying a
:class:`~privacy.mechanisms.messages.Message` (an English template marked for the
catalogues, and its parameters); jobs store their refusal and failure reasons the same
way (``Job.error_message``). Here, on the Django side, the template is translated with
gettext into the active language (``LocaleMiddleware``: ``?lang=``, else
``Accept-Language``) and formatted with the parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

from django.utils.translation import gettext


@runtime_checkable
class Message(Protocol):
    """What this module reads of a translatable message: its English ``%``-template and
    its named parameters (a parameter that is a message, or a stored mapping, is translated
    too). :class:`privacy.mechanisms.messages.Message` is one; the kernel names the shape
    rather than importing it, so that it imports no app."""

    @property
    def template(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...


def message_of(error: BaseException | Message | str) -> Message | str:
    """The translatable message an error carries, else its English text."""
    if isinstance(error, (Message, str)):
        return error
    carried = getattr(error, "message", None)
    return carried if isinstance(carried, Message) else str(error)


def translate(error: BaseException | Message | Mapping[str, Any] | str) -> str:
    """``error`` in the active language.

    A :class:`Message` (or an exception carrying one as ``.message``, or a stored
    ``{"template", "params"}`` mapping) is translated; any other error or string is
    returned as its text (Django-side errors are translated where they are raised).
    """
    if isinstance(error, Mapping):  # stored as {"template", "params"} (Message.as_json)
        template, params = str(error["template"]), dict(error.get("params") or {})
    else:
        found = message_of(error)
        if isinstance(found, str):
            return found
        template, params = found.template, dict(found.params)
    try:
        return gettext(template) % {key: _translated(value) for key, value in params.items()}
    except (KeyError, TypeError, ValueError):  # a broken translation: say it in English
        return _english(template, params)


def _translated(value: Any) -> Any:
    """A parameter in the active language: a nested message (or a stored one) is
    translated, anything else is already formatted."""
    return translate(value) if isinstance(value, (Message, Mapping)) else value


def _english(template: str, params: Mapping[str, Any]) -> str:
    """The English text, as ``str(Message)`` gives it."""
    return template % {
        key: _english(str(value["template"]), dict(value.get("params") or {}))
        if isinstance(value, Mapping)
        else str(value)
        for key, value in params.items()
    }


def translate_notes(notes: Iterable[Any] | None) -> list[str]:
    """A result's ``notes`` in the active language: each stored note is its template and
    parameters (``privacy.mechanisms.messages.note_json``), or, in results stored before
    notes were translatable, its English text (shown as it is)."""
    return [translate(note) for note in notes or []]


# Result fields that hold one stored message (template + parameters, or the English
# text of results stored before): a panel's ``guarantee``.
MESSAGE_FIELDS = frozenset({"guarantee"})


def localise_result(value: Any) -> Any:
    """A stored result or report document with every ``notes`` list and every message
    field (:data:`MESSAGE_FIELDS`) in the active language (a copy; the stored value is
    untouched). The API's ``notes`` stay a list of strings and a panel's ``guarantee`` a
    string (api.md), now in the reader's language."""
    if isinstance(value, Mapping):
        return {
            key: translate_notes(item)
            if key == "notes" and isinstance(item, list)
            else translate(item)
            if key in MESSAGE_FIELDS and isinstance(item, (Mapping, str))
            else localise_result(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [localise_result(item) for item in value]
    return value
