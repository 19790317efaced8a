"""shared/reasons/ is one package of sentences split by subject: each sentence is defined in one
module, reachable from the package as before, and no module grows into a room that wants splitting."""

from __future__ import annotations

import ast
from pathlib import Path

import shared.reasons as reasons

PACKAGE = Path(reasons.__file__).parent
MODULES = sorted(p for p in PACKAGE.glob("*.py") if p.name != "__init__.py")


def defined_names(path: Path) -> list[str]:
    """The public constants and formatters a module defines (not those it imports)."""
    names = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
    return [n for n in names if not n.startswith("_")]


def test_every_module_is_imported_by_the_package():
    init = (PACKAGE / "__init__.py").read_text()
    assert [p.stem for p in MODULES if f"from shared.reasons.{p.stem} import *" not in init] == []


def test_no_sentence_is_defined_twice():
    owners: dict[str, list[str]] = {}
    for path in MODULES:
        for name in defined_names(path):
            owners.setdefault(name, []).append(path.stem)
    assert {n: m for n, m in owners.items() if len(m) > 1} == {}


def test_every_sentence_is_reachable_from_the_package():
    import importlib

    for path in MODULES:
        module = importlib.import_module(f"shared.reasons.{path.stem}")
        for name in defined_names(path):
            assert getattr(reasons, name) is getattr(module, name), f"{path.stem}.{name}"


def test_no_module_is_past_a_few_hundred_lines():
    assert {p.name: n for p in MODULES if (n := len(p.read_text().splitlines())) > 400} == {}
