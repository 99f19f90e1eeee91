"""The ground floor: helpers every app may import, and which import no app.

``core.strict`` (request fields that refuse what DRF would drop or convert),
``core.messages`` (translatable messages in the reader's language), ``core.i18n``
(the language of a page or download) and ``core.errors`` (the domain's error classes,
mapped to HTTP by ``config.errors``). Django, DRF and the standard library only; the
import-linter layers contract in ``pyproject.toml`` keeps it so.
"""
