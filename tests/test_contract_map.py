"""tests/README.md's contract map names tests that exist (renamed or removed tests fail here)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent


def test_every_test_the_contract_map_names_exists() -> None:
    text = (TESTS / "README.md").read_text()
    missing = []
    current: Path | None = None
    # `tests/x.py::test_y`, or `::test_z` continuing the last file named in the same table
    for match in re.finditer(r"`(tests/[^`:\s]+\.py)?(?:::(test_\w+))?`", text):
        path, name = match.group(1), match.group(2)
        if path:
            current = REPO / path
            if not current.exists():
                missing.append(path)
                continue
        if name:
            assert current is not None, f"::{name} names no file"
            if not re.search(rf"^def {name}\b", current.read_text(), flags=re.M):
                missing.append(f"{current.relative_to(REPO)}::{name}")
    assert not missing, f"tests/README.md names tests that do not exist: {missing}"
    assert text.count("::test_") > 50  # the map is there
