"""pytest plugin for the mutant runs (mutation/run.py passes ``-p mutation_db``).

mutmut runs each mutant in a new pytest session forked from its main process, and a new
session would create and migrate a new SQLite test database each time (seconds per
mutant). Instead every session takes one of a few database files in the module's work
directory, locked for its lifetime so that two mutants running at once never share one,
and keeps it between sessions (pytest-django's --reuse-db).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from typing import Any

import pytest

_held: list[Any] = []


@pytest.hookimpl(trylast=True)
def pytest_configure(config: Any) -> None:
    folder = Path(os.environ.get("MUTATION_DB_DIR", "."))
    for slot in range(16):
        handle = open(folder / f"test-db-{slot}.lock", "w")  # noqa: SIM115 (held open)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            continue
        _held.append(handle)
        name = str(folder / f"test-db-{slot}.sqlite3")
        from django.conf import settings
        from django.db import connections

        for databases in (settings.DATABASES, connections.settings):
            entry = databases["default"]
            if "sqlite3" in entry["ENGINE"]:
                entry.setdefault("TEST", {})["NAME"] = name
        return


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Run the module's tests in the order modules.toml lists them (fast, direct tests
    first), so a mutant is usually killed before the slow end-to-end tests start."""
    order = [p for p in os.environ.get("MUTATION_TEST_ORDER", "").split(os.pathsep) if p]
    if not order:
        return

    def rank(item: Any) -> int:
        path = item.nodeid.split("::", 1)[0]
        for index, prefix in enumerate(order):
            if item.nodeid == prefix or item.nodeid.startswith(prefix + "["):
                return index
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return index
        return len(order)

    items.sort(key=rank)
