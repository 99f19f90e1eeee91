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
# A documented family of names: CELERY_<LANE>_TIME_LIMIT stands for CELERY_PANELS_TIME_LIMIT.
DOCUMENTED = re.compile(r"`([A-Z][A-Z0-9_]*(?:<[A-Z]+>[A-Z0-9_]*)*)`")
# ${VAR} in docker-compose.yml, not $${VAR} (the container's own shell variable)
COMPOSE_VARIABLE = re.compile(r"(?<!\$)\$\{([A-Z][A-Z0-9_]*)")
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
    """Every environment variable the server's code reads: through config/env.py's helpers
    (env_str, env_int, ...), os.environ.get / [...] / setdefault / pop and os.getenv, by a
    literal name or an f-string (a family such as CELERY_<>_TIME_LIMIT), and every
    ${VARIABLE} docker-compose.yml takes from .env; each with where it is read."""
    found: dict[str, str] = {}
    for package in CODE:
        for path in sorted((REPO / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                name = None
                if isinstance(node, ast.Call) and node.args:
                    first, func = node.args[0], node.func
                    called = getattr(func, "id", None) or getattr(func, "attr", None)
                    reads = called in READERS or (
                        called in ENVIRON_METHODS
                        and isinstance(func, ast.Attribute)
                        and "environ" in ast.unparse(func.value)
                    )
                    if reads and isinstance(first, ast.Constant) and isinstance(first.value, str):
                        name = first.value
                    elif reads and isinstance(first, ast.JoinedStr):
                        # f"CELERY_{lane.upper()}_TIME_LIMIT" -> CELERY_<>_TIME_LIMIT
                        name = "".join(
                            part.value if isinstance(part, ast.Constant) else "<>"
                            for part in first.values
                        )
                elif (
                    isinstance(node, ast.Subscript)
                    and "environ" in ast.unparse(node.value)
                    and isinstance(node.slice, ast.Constant)
                    and isinstance(node.slice.value, str)
                ):
                    name = node.slice.value
                if name and NAME.fullmatch(name.replace("<>", "X")):
                    found.setdefault(name, f"{path.relative_to(REPO)}:{node.lineno}")
    compose = REPO / "docker-compose.yml"
    for number, line in enumerate(compose.read_text().splitlines(), start=1):
        for name in COMPOSE_VARIABLE.findall(line):
            found.setdefault(name, f"docker-compose.yml:{number}")
    return found


def _documents(documented: str, name: str) -> bool:
    """Whether a documented name (maybe a family, CELERY_<LANE>_TIME_LIMIT) covers a name
    read by the code (maybe from an f-string, CELERY_<>_TIME_LIMIT)."""
    pattern = "".join(
        "[A-Z0-9_<>]+" if part.startswith("<") else re.escape(part)
        for part in re.split(r"(<[A-Z]*>)", documented)
        if part
    )
    return re.fullmatch(pattern, name) is not None


def test_every_environment_variable_the_code_reads_is_documented() -> None:
    """A setting an operator cannot find is a setting they cannot use: each variable read
    anywhere in the server's code has a row in docs/operators/configuration.md."""
    read = environment_variables_read()
    # the scan sees the settings module's variables (fails if the scan itself breaks)
    assert {"DJANGO_SECRET_KEY", "DATABASE_URL", "ANALYSIS_COST_BUDGET", "GUNICORN_WORKERS"} <= set(
        read
    ), sorted(read)
    rows = [line for line in CONFIGURATION.read_text().splitlines() if line.startswith("|")]
    documented = {name for row in rows for name in DOCUMENTED.findall(row.split("|")[1])}
    missing = {
        name: where
        for name, where in read.items()
        if not any(_documents(entry, name) for entry in documented)
    }
    assert not missing, (
        "Environment variables read by the code but missing from "
        "docs/operators/configuration.md (add a row: | `NAME` | default | meaning |): "
        + ", ".join(f"{name} ({where})" for name, where in sorted(missing.items()))
    )
