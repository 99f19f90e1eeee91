"""Changelist filters that show a field's values in the organiser's language.

The models' choices are the API's English words (``draft``, ``succeeded``, ``count``):
Django's filters would show them as they are. :func:`labelled_filter` makes a filter that
shows each value through a function giving its label in the active language (the job
pages' own labels, e.g. ``reconstruction.result_view.status_label``), keeping Django's
lookups, so a filtered changelist's address is the same as before::

    list_filter = [("status", labelled_filter(status_label)), ...]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from django.contrib import admin


def labelled_filter(
    label: Callable[[str], str], *, choices: bool = True
) -> type[admin.FieldListFilter]:
    """A list filter showing each value as ``label(value)``: a field with choices
    (``choices=True``) or one with free values (``choices=False``, e.g. a kind name)."""
    base: Any = admin.ChoicesFieldListFilter if choices else admin.AllValuesFieldListFilter

    class LabelledFilter(base):  # type: ignore[misc, valid-type]
        def choices(self, changelist: Any) -> Iterator[dict[str, Any]]:
            # The first entry is Django's translated "All" (no value behind it).
            for index, choice in enumerate(super().choices(changelist)):
                display = choice.get("display")
                if index and isinstance(display, str) and display:
                    choice = {**choice, "display": label(display)}
                yield choice

    return LabelledFilter
