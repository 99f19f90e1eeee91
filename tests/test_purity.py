"""The pure layers never import a framework (architecture.md, "Layers")."""

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PURE_PACKAGES = ("privacy.mechanisms", "reconstruction.algorithms")
FORBIDDEN = ("django", "celery", "rest_framework", "kombu")


def _modules() -> list[str]:
    names = []
    for package in PURE_PACKAGES:
        path = ROOT / package.replace(".", "/")
        names.append(package)
        names += [f"{package}.{info.name}" for info in pkgutil.iter_modules([str(path)])]
    return names


@pytest.mark.parametrize("module", _modules())
def test_source_imports_no_framework(module: str) -> None:
    path = ROOT / module.replace(".", "/")
    file = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    tree = ast.parse(file.read_text(), filename=str(file))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        else:
            continue
        for name in names:
            assert name.split(".")[0] not in FORBIDDEN, f"{module} imports {name}"


def test_importing_the_pure_packages_loads_no_framework() -> None:
    # A fresh interpreter: indirect imports (through privacy/__init__ etc.) count too.
    code = (
        "import sys\n"
        + "".join(f"import {name}\n" for name in _modules())
        + f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        + "print(','.join(bad))\n"
    )
    output = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert output == "", f"pure packages load {output}"
    assert importlib.import_module("privacy.mechanisms")
