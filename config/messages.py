"""Pure-layer messages in the request's language.

The pure maths raises :class:`privacy.mechanisms.messages.InputError` carrying a
:class:`~privacy.mechanisms.messages.Message` (an English template marked for the
catalogues, and its parameters); jobs store their refusal and failure reasons the same
way (``Job.error_message``). Here, on the Django side, the template is translated with
gettext into the active language (``LocaleMiddleware``: ``?lang=``, else
``Accept-Language``) and formatted with the parameters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.utils.translation import gettext

from privacy.mechanisms.messages import Message


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
    if isinstance(error, Mapping):
        error = Message.from_json(error)
    found = message_of(error)
    if isinstance(found, str):
        return found
    params = {
        key: translate(value) if isinstance(value, Message) else value
        for key, value in found.params.items()
    }
    try:
        return gettext(found.template) % params
    except (KeyError, TypeError, ValueError):  # a broken translation: say it in English
        return str(found)


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
