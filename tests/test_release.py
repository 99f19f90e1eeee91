"""Releases: the licence, the changelog's compatibility table, and the client packages as
`make dist` builds them, installed the way docs/portal/client-kit.md says (from the npm
tarball into a scratch project; from the wheel into a fresh virtual environment), offline."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JS = REPO / "clients" / "js"
PY_CLIENT = REPO / "clients" / "python"


def versions() -> dict[str, str]:
    from django.conf import settings

    return {
        "server": tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"],
        "api": settings.SPECTACULAR_SETTINGS["VERSION"],
        "js": json.loads((JS / "package.json").read_text())["version"],
        "python": tomllib.loads((PY_CLIENT / "pyproject.toml").read_text())["project"]["version"],
    }


def test_the_licence_is_the_mit_licence_the_packages_declare() -> None:
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    assert json.loads((JS / "package.json").read_text())["license"] == "MIT"
    assert tomllib.loads((PY_CLIENT / "pyproject.toml").read_text())["project"]["license"] == "MIT"
    for folder in (JS, PY_CLIENT):  # each package ships the licence text
        assert (folder / "LICENSE").read_text() == (REPO / "LICENSE").read_text()


def test_the_changelog_names_the_versions_that_ship_together() -> None:
    """CHANGELOG.md follows Keep a Changelog; its compatibility table's newest row is the
    versions written in the package files (fails when one is bumped alone)."""
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in changelog
    assert re.search(r"^## \[\d+\.\d+\.\d+\] - \d{4}-\d{2}-\d{2}$", changelog, re.M)
    table = changelog[changelog.index("## Compatibility") :]
    (newest,) = [line for line in table.splitlines() if re.match(r"\| \d", line)][:1]
    cells = [cell.strip() for cell in newest.strip("|").split("|")]
    found = versions()
    assert cells[0] == found["server"], (cells, found)
    assert cells[1].startswith(found["api"]), (cells, found)
    assert cells[2] == found["js"] and cells[3] == found["python"], (cells, found)
    client_kit = (REPO / "docs" / "portal" / "client-kit.md").read_text()
    assert f"consultations-distort-{found['js']}.tgz" in client_kit
    assert f"consultation_client-{found['python']}-py3-none-any.whl" in client_kit


def test_the_npm_tarball_installs_into_a_scratch_project_and_imports(tmp_path: Path) -> None:
    assert shutil.which("npm"), "npm is missing: apt-get install npm (make test does)"
    version = versions()["js"]
    packed = subprocess.run(
        ["npm", "pack", "--silent", "--pack-destination", str(tmp_path)],
        cwd=JS, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    tarball = tmp_path / packed.stdout.strip().splitlines()[-1]
    assert tarball.name == f"consultations-distort-{version}.tgz"
    project = tmp_path / "portal"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "portal", "private": True}))
    subprocess.run(
        ["npm", "install", "--offline", "--no-audit", "--no-fund", "--save-exact", str(tarball)],
        cwd=project, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    installed = project / "node_modules" / "@consultations" / "distort"
    assert not installed.is_symlink() and (installed / "src" / "distort.js").is_file()
    assert {p.name for p in installed.iterdir()} >= {"package.json", "README.md", "LICENSE"}
    script = (
        "const m = await import('@consultations/distort');"
        "console.log(JSON.stringify({version: m.VERSION, distort: typeof m.distortAnswers,"
        " submit: typeof m.submitResponse}));"
    )
    run = subprocess.run(
        ["node", "--input-type=module", "-e", script],
        cwd=project, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(run.stdout) == {
        "version": version,
        "distort": "function",
        "submit": "function",
    }
    pinned = json.loads((project / "package.json").read_text())["dependencies"]
    assert pinned["@consultations/distort"].endswith(tarball.name)


def test_the_wheel_installs_into_a_fresh_venv_and_imports(tmp_path: Path) -> None:
    """Built offline as `make dist` does (python -m build --no-isolation), installed with
    pip --no-index --no-deps into a new venv; its one dependency, requests, is the one
    already installed here (a .pth line), so nothing is fetched."""
    version = versions()["python"]
    source = shutil.copytree(
        PY_CLIENT, tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info", "build")
    )
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--sdist",
         "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    (wheel,) = dist.glob(f"consultation_client-{version}-py3-none-any.whl")
    assert (dist / f"consultation_client-{version}.tar.gz").is_file()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
         "--no-index", "--no-deps", str(wheel)],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    import requests

    site = next((venv / "lib").glob("python3.*/site-packages"))
    (site / "already-available-deps.pth").write_text(str(Path(requests.__file__).parents[1]))
    probe = (
        "import consultation_client as c, importlib.metadata as m; "
        "print(c.__version__, m.version('consultation-client'), c.__file__); "
        "print(callable(c.PortalClient), callable(c.distort_answers))"
    )
    run = subprocess.run(
        [str(python), "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    first, second = run.stdout.splitlines()
    installed_version, metadata_version, where = first.split()
    assert installed_version == metadata_version == version
    assert Path(where).is_relative_to(site), where  # the venv's copy, not the repository's
    assert second == "True True"
