"""Translatable messages of the pure layer: stored as template + parameters (issue 33).

A refusal or a note is stored language-neutral and shown in the reader's language later;
a message that does not survive its JSON round trip, or a note that loses its template
when a worker pool pickles it, reaches the reader in English or not at all.
"""

from __future__ import annotations

import pickle

import pytest

from privacy.mechanisms.messages import InputError, Message, Note, gettext_noop, note_json

INNER = Message("the group of %(name)s", {"name": "stratum N"})
OUTER = Message("%(reason)s (threshold %(threshold)s)", {"reason": INNER, "threshold": 5})


def test_a_message_reads_as_its_english_text_with_nested_messages() -> None:
    assert str(OUTER) == "the group of stratum N (threshold 5)"
    assert gettext_noop("as is") == "as is"


def test_a_message_is_stored_as_template_and_parameters_and_read_back() -> None:
    stored = OUTER.as_json()
    assert stored == {
        "template": "%(reason)s (threshold %(threshold)s)",
        "params": {
            "reason": {"template": "the group of %(name)s", "params": {"name": "stratum N"}},
            "threshold": 5,
        },
    }
    assert Message.from_json(stored) == OUTER
    assert Message.from_json({"template": "plain"}) == Message("plain", {})
    assert Message.from_json({"template": 7, "params": None}) == Message("7", {})


def test_a_note_is_its_text_and_keeps_its_message_through_pickling() -> None:
    note = Note("intervals are %(times)s times wider", times="3.2")
    assert note == "intervals are 3.2 times wider"
    assert note.message == Message("intervals are %(times)s times wider", {"times": "3.2"})
    copy = pickle.loads(pickle.dumps(note))
    assert copy == note and isinstance(copy, Note)
    assert copy.message == note.message


def test_a_note_is_stored_as_its_message_and_any_other_note_as_text() -> None:
    note = Note("wide by %(times)s", times="3")
    assert note_json(note) == {"template": "wide by %(times)s", "params": {"times": "3"}}
    assert note_json(INNER) == INNER.as_json()
    assert note_json("plain text") == "plain text"


def test_an_input_error_is_a_value_error_with_its_message() -> None:
    with pytest.raises(ValueError, match=r"^k must be 3, got 2$") as raised:
        raise InputError("k must be %(k)s, got %(got)s", k=3, got=2)
    assert raised.value.message == Message("k must be %(k)s, got %(got)s", {"k": 3, "got": 2})
