"""Error messages of the pure layer, kept translatable without importing a framework.

The pure maths (``privacy.mechanisms``, ``reconstruction.algorithms``) must not import
Django, yet its input checks reach residents and analysts as API errors in their own
language. So an error carries a :class:`Message`: an English ``%``-template and its
parameters. ``str()`` gives the English text (the pure code and its tests need nothing
else); the service layer (``core.messages``) translates the template with gettext and
formats it with the parameters.

Templates are marked with :func:`gettext_noop`, the name Django's ``makemessages`` looks
for, so they land in ``locale/*/LC_MESSAGES/django.po`` like every other string.
A template is a literal (never an f-string), uses named placeholders ``%(name)s`` only,
and writes a literal percent sign as ``%%``. Parameters are formatted already (numbers as
the English text shows them), so a translation needs no number formatting of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["InputError", "Message", "Note", "gettext_noop", "note_json"]


def gettext_noop(template: str) -> str:
    """Mark ``template`` for the catalogues (``makemessages``); returns it unchanged."""
    return template


@dataclass(frozen=True)
class Message:
    """A translatable message: an English ``%``-template and its named parameters.

    Parameters
    ----------
    template : str
        English text with ``%(name)s`` placeholders, marked with :func:`gettext_noop`.
    params : mapping of str to str, int, float or Message
        The values of the placeholders; a :class:`Message` value is translated too.
    """

    template: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.template % {key: str(value) for key, value in self.params.items()}

    def as_json(self) -> dict[str, Any]:
        """The message as plain JSON (a stored job's reason)."""
        return {
            "template": self.template,
            "params": {
                key: value.as_json() if isinstance(value, Message) else value
                for key, value in self.params.items()
            },
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Message:
        """The inverse of :meth:`as_json`."""
        params = {
            key: cls.from_json(value) if isinstance(value, Mapping) else value
            for key, value in dict(data.get("params") or {}).items()
        }
        return cls(str(data["template"]), params)


class Note(str):
    """A result's note: its English text (a ``str``, so the pure code, its callers and
    tests read notes as before) carrying the translatable :class:`Message` it came from.

    Results store a note as :func:`note_json` (template + parameters, language-neutral);
    the service layer (``core.messages.translate``) shows it in the reader's language.

    Parameters
    ----------
    template : str
        The English template, marked with :func:`gettext_noop`.
    **params
        The placeholders' values, formatted already.
    """

    message: Message

    def __new__(cls, template: str, /, **params: Any) -> Note:
        message = Message(template, params)
        note = super().__new__(cls, str(message))
        note.message = message
        return note

    def __reduce__(self) -> tuple[Any, ...]:  # pickled with its template (worker pools)
        return (_note, (self.message.template, dict(self.message.params)))


def _note(template: str, params: dict[str, Any]) -> Note:
    return Note(template, **params)


def note_json(note: str | Message) -> str | dict[str, Any]:
    """A note as a result stores it: a :class:`Note`'s (or a :class:`Message`'s)
    template and parameters, any other note as its text."""
    if isinstance(note, Note):
        return note.message.as_json()
    if isinstance(note, Message):
        return note.as_json()
    return str(note)


class InputError(ValueError):
    """Input the pure layer cannot compute with; ``message`` says why, translatably.

    A ``ValueError``, so callers that catch ``ValueError`` keep working; ``str()`` is the
    English text.

    Parameters
    ----------
    template : str
        The English template, marked with :func:`gettext_noop`.
    **params
        The placeholders' values.
    """

    def __init__(self, template: str, /, **params: Any) -> None:
        self.message = Message(template, params)
        super().__init__(str(self.message))
