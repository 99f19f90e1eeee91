"""Dependencies: every direct requirement is pinned in a hashed lock file, which is what
`make` and the Dockerfile install, and nothing unused is listed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PIN = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s;\\]+)")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> dict[str, str]:
    found = {}
    for line in path.read_text().splitlines():
        match = PIN.match(line.strip())
        if match:
            found[canonical(match.group(1))] = match.group(2)
    return found


def lock_entries(path: Path) -> dict[str, list[str]]:
    """Package -> its hashes, from a `uv pip compile --generate-hashes` file."""
    entries: dict[str, list[str]] = {}
    current = None
    for line in path.read_text().splitlines():
        match = PIN.match(line)
        if match:
            current = canonical(match.group(1))
            entries[current] = []
        elif current and "--hash=sha256:" in line:
            entries[current].append(line.split("--hash=sha256:")[1].split()[0])
    return entries


@pytest.mark.parametrize(
    ("requirements", "lock"),
    [("requirements.txt", "requirements.lock"), ("requirements-dev.txt", "requirements-dev.lock")],
)
def test_lock_files_pin_every_requirement_with_hashes(requirements: str, lock: str) -> None:
    direct = pins(REPO / requirements)
    if requirements == "requirements-dev.txt":
        direct |= pins(REPO / "requirements.txt")
    locked = lock_entries(REPO / lock)
    stale = {name: version for name, version in direct.items() if locked.get(name) is None} | {
        name: version
        for name, version in direct.items()
        if name in locked and pins(REPO / lock)[name] != version
    }
    assert not stale, f"{lock} is stale for {stale}: run `make lock` and commit it"
    unhashed = [name for name, hashes in locked.items() if not hashes]
    assert not unhashed, f"{lock} has entries without hashes: {unhashed}"


def test_make_and_the_dockerfile_install_the_lock_files() -> None:
    makefile = (REPO / "Makefile").read_text()
    assert "--require-hashes -r requirements.lock" in makefile
    assert "--require-hashes -r requirements-dev.lock" in makefile
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "pip install --require-hashes -r requirements.lock" in dockerfile


def test_no_unused_dependency_is_listed() -> None:
    listed = set(pins(REPO / "requirements.txt")) | set(pins(REPO / "requirements-dev.txt"))
    assert "factory-boy" not in listed  # tests/factories.py uses plain functions
