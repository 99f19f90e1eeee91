"""The documentation site (docs/, mkdocs.yml) builds strictly, and the operators' page
documents every environment variable the code reads."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CONFIGURATION = REPO / "docs" / "operators" / "configuration.md"
# Where the server's code lives (tests, benchmarks, clients and docs read no settings).
CODE = ("config", "core", "consultations", "surveys", "reconstruction", "privacy", "webhooks")
NAME = re.compile(r"[A-Z][A-Z0-9_]+")
READERS = {"env_str", "env_bool", "env_int", "env_list", "env_float", "getenv"}
ENVIRON_METHODS = {"get", "setdefault", "pop"}


def test_the_documentation_site_builds_with_mkdocs_strict(tmp_path: Path) -> None:
    """`mkdocs build --strict`: a broken link, a missing page or a bad anchor in any page
    under docs/ (including pages other people add) fails here, naming the page."""
    build = subprocess.run(
        # not --quiet: it hides the warnings that --strict counts, and the build passes
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path)],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    problems = [line for line in build.stderr.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert build.returncode == 0, (
        "The documentation site does not build (`mkdocs build --strict`). Fix each line "
        "below in the page it names: link only to pages inside docs/ with a relative path "
        "(e.g. ../operators/configuration.md), write files outside docs/ (bench/, the "
        "Makefile, README.md) as `code` instead of links, and check #anchors against the "
        "target page's headings. Preview with `make docs`.\n"
        + "\n".join(problems or build.stderr.splitlines()[-30:])
    )
    assert (tmp_path / "index.html").is_file()
    # The guides every reader needs are in the built site.
    for page in (
        "getting-started",
        "operators/configuration",
        "operators/deploy",
        "operators/backups",
        "portal/client-kit",
        "reference/api",
        "methods",
        "figures",
    ):
        assert (tmp_path / page / "index.html").is_file(), page


def environment_variables_read() -> dict[str, str]:
    """Every environment variable the server's code reads by a literal name: through
    config/env.py's helpers (env_str, env_int, ...), os.environ.get / [...] /
    setdefault / pop, and os.getenv; each with where it is read."""
    found: dict[str, str] = {}
    for package in CODE:
        for path in sorted((REPO / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                name = None
                if isinstance(node, ast.Call) and node.args:
                    first = node.args[0]
                    func = node.func
                    called = getattr(func, "id", None) or getattr(func, "attr", None)
                    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                        continue
                    if called in READERS or (
                        called in ENVIRON_METHODS
                        and isinstance(func, ast.Attribute)
                        and "environ" in ast.unparse(func.value)
                    ):
                        name = first.value
                elif (
                    isinstance(node, ast.Subscript)
                    and "environ" in ast.unparse(node.value)
                    and isinstance(node.slice, ast.Constant)
                    and isinstance(node.slice.value, str)
                ):
                    name = node.slice.value
                if name and NAME.fullmatch(name):
                    found.setdefault(name, f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    """A setting an operator cannot find is a setting they cannot use: each variable read
    anywhere in the server's code has a row in docs/operators/configuration.md."""
    read = environment_variables_read()
    # the scan sees the settings module's variables (fails if the scan itself breaks)
    assert {"DJANGO_SECRET_KEY", "DATABASE_URL", "ANALYSIS_COST_BUDGET", "GUNICORN_WORKERS"} <= set(
        read
    ), sorted(read)
    rows = [line for line in CONFIGURATION.read_text().splitlines() if line.startswith("|")]
    documented = {
        name for row in rows for name in re.findall(r"`([A-Z][A-Z0-9_]+)`", row.split("|")[1])
    }
    missing = {name: where for name, where in read.items() if name not in documented}
    assert not missing, (
        "Environment variables read by the code but missing from "
        "docs/operators/configuration.md (add a row: | `NAME` | default | meaning |): "
        + ", ".join(f"{name} ({where})" for name, where in sorted(missing.items()))
    )
