"""Fill the German and Polish catalogues from the dictionaries below, then compile them.

    .venv/bin/python locale/fill.py      (after manage.py makemessages -l de -l pl ...)

Translators may as well edit the .po files directly; this script only fills entries that
are empty or fuzzy and recompiles every .mo (polib, no GNU gettext needed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import polib

HERE = Path(__file__).resolve().parent
HEADERS = {
    "de": {"Language": "de", "Plural-Forms": "nplurals=2; plural=(n != 1);"},
    "pl": {
        "Language": "pl",
        "Plural-Forms": (
            "nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<12 || n%100>14) ? 1 : 2);"
        ),
    },
}

sys.path.insert(0, str(HERE))
from catalogue import TRANSLATIONS  # noqa: E402


def fill(language: str) -> list[str]:
    path = HERE / language / "LC_MESSAGES" / "django.po"
    po = polib.pofile(str(path))
    po.metadata.update(HEADERS[language])
    po.metadata["Content-Type"] = "text/plain; charset=UTF-8"
    missing = []
    table = TRANSLATIONS[language]
    for entry in po:
        if entry.obsolete:
            continue
        if entry.translated() and "fuzzy" not in entry.flags:
            # makemessages' "#| msgid" note of a fuzzy match is stale once translated
            entry.previous_msgid = entry.previous_msgid_plural = entry.previous_msgctxt = None
            continue
        value = table.get(entry.msgid)
        if value is None:
            missing.append(entry.msgid)
            continue
        if entry.msgid_plural:
            forms = value if isinstance(value, list) else [value]
            entry.msgstr_plural = dict(enumerate(forms))
        else:
            entry.msgstr = value
        if "fuzzy" in entry.flags:
            entry.flags.remove("fuzzy")
    po.save(str(path))
    po.save_as_mofile(str(path.with_suffix(".mo")))
    return missing


if __name__ == "__main__":
    problems = {language: fill(language) for language in HEADERS}
    for language, missing in problems.items():
        for msgid in missing:
            print(f"{language}: untranslated: {msgid!r}")
    sys.exit(1 if any(problems.values()) else 0)
