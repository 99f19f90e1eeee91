"""No product file over 800 lines (issue 24): a newcomer finds their room.

Product files are the Python and JavaScript sources of the apps, the engine and the
client kits; migrations, tests and benchmarks are not product files.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT = 800


def _product_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "*.py", "*.js"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    files = []
    for name in listed:
        parts = Path(name).parts
        if parts[0] in {"tests", "bench", "docs"} or "migrations" in parts:
            continue
        if {"test", "tests"} & set(parts[1:]):
            continue
        files.append(REPO / name)
    return files


def test_the_product_files_are_listed() -> None:
    names = {p.relative_to(REPO).as_posix() for p in _product_files()}
    # The census must see the engine, the apps and both client kits, or it checks nothing.
    assert "surveys/schemes.py" in names
    assert "reconstruction/registry.py" in names
    assert any(n.startswith("reconstruction/algorithms/") for n in names)
    assert any(n.startswith("clients/js/") for n in names)
    assert not any("/migrations/" in n or n.startswith("tests/") for n in names)


def test_no_product_file_is_over_800_lines() -> None:
    too_long = {
        p.relative_to(REPO).as_posix(): n
        for p in _product_files()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > LIMIT
    }
    assert not too_long, f"product files over {LIMIT} lines (split them by capability): {too_long}"
