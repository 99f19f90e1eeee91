"""The packaged clients: the server serves the npm package's own file, and the Python
client builds as a wheel that depends on requests only."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

from django.contrib.staticfiles import finders
from django.test import Client, override_settings

REPO = Path(__file__).resolve().parents[2]
PACKAGE_JS = REPO / "clients" / "js" / "src" / "distort.js"


def test_the_server_serves_the_packaged_browser_library_byte_for_byte():
    found = finders.find("privacy/distort.js")
    assert found is not None, "privacy/distort.js is not among the static files"
    assert Path(found).read_bytes() == PACKAGE_JS.read_bytes()
    assert Path(found).resolve() == PACKAGE_JS.resolve()


@override_settings(PORTAL_EXAMPLE_ENABLED=True, PORTAL_EXAMPLE_KEY="k-example")
def test_the_example_page_imports_the_served_library(db):
    page = Client().get("/portal-example/3/")
    assert page.status_code == 200
    assert b'from "/static/privacy/distort.js"' in page.content


def test_pip_wheel_builds_the_python_client_with_requests_as_its_only_dependency(tmp_path):
    # Build from a copy: setuptools writes build/ next to the sources.
    source = shutil.copytree(
        REPO / "clients" / "python", tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info")
    )
    wheels = tmp_path / "wheels"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(wheels),
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    version = tomllib.loads((REPO / "clients" / "python" / "pyproject.toml").read_text())[
        "project"
    ]["version"]
    (wheel,) = wheels.glob(f"consultation_client-{version}-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"consultation_client-{version}.dist-info/METADATA").decode()
    assert {
        "consultation_client/__init__.py",
        "consultation_client/distortion.py",
        "consultation_client/http.py",
        "consultation_client/py.typed",
    } <= names
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == ["Requires-Dist: requests<3,>=2.28"]
