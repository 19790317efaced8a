"""Where code reads a run plan's field by its name in a string (tests/test_architecture.py).

The plan has one typed home, `shared/plans/` (`TrainingPlan`): outside it, a field is an attribute
(`plan.hyperparameters.batch_size`), so a typo fails where it is written, not in a worker hours
after the run was accepted. What counts as a read by string, found in the source:

- `PLAN[<string>]` and `PLAN.get(<string>, ...)`, where PLAN is a plan: a name `plan` or `*_plan`,
  an attribute `.plan` (`job.plan`), a document's plan (`run["plan"]`, `run.get("plan")`, either
  `or {}`), a read of one of these (`plan["grpo"]["rewards"]`: two reads), or a local name a
  function set from one (`hp = plan["hyperparameters"]`, then `hp["batchSize"]`);
- `setting(<anything>, <string>, ...)` (the engines' old `kit.setting(plan, "part", "field")`) and
  `plan_default(<string>, ...)` (a field's default by its path).

Reading the document's `"plan"` key itself (`run["plan"]`, to hand it to `TrainingPlan.from_dict`)
is not a read of a field.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterator

STRING_PATH_CALLS = ("setting", "plan_default")


def _string(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _unwrapped(node: ast.AST) -> ast.AST:
    """`(x or {})` is x."""
    while isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and node.values:
        node = node.values[0]
    return node


def _keyed(node: ast.AST) -> tuple[ast.AST, ast.AST] | None:
    """(what is read, the key) of `x[key]` or `x.get(key, ...)`."""
    if isinstance(node, ast.Subscript):
        return node.value, node.slice
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and node.args):
        return node.func.value, node.args[0]
    return None


class _Reads(ast.NodeVisitor):
    def __init__(self) -> None:
        self.found: list[tuple[int, str]] = []
        self.aliases: list[set[str]] = [set()]

    def is_plan(self, node: ast.AST) -> bool:
        node = _unwrapped(node)
        if isinstance(node, ast.Name):
            return node.id == "plan" or node.id.endswith("_plan") or node.id in self.aliases[-1]
        if isinstance(node, ast.Attribute):
            return node.attr == "plan"
        keyed = _keyed(node)
        if keyed is None:
            return False
        value, key = keyed
        if isinstance(key, ast.Constant) and key.value == "plan":
            return True  # run["plan"]: the plan of a document
        return self.is_read(node)

    def is_read(self, node: ast.AST) -> bool:
        keyed = _keyed(_unwrapped(node))
        return keyed is not None and _string(keyed[1]) and self.is_plan(keyed[0])

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.aliases.append(set(self.aliases[-1]))
        self.generic_visit(node)
        self.aliases.pop()

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        if self.is_read(node.value):
            self.aliases[-1].update(t.id for t in node.targets if isinstance(t, ast.Name))

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if self.is_read(node):
            self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        if self.is_read(node):
            self.found.append((node.lineno, ast.unparse(node)))
        elif name == "setting" and len(node.args) > 1 and _string(node.args[1]):
            self.found.append((node.lineno, ast.unparse(node)))
        elif name == "plan_default" and node.args and _string(node.args[0]):
            self.found.append((node.lineno, ast.unparse(node)))
        self.generic_visit(node)


def reads_in(source: str) -> list[tuple[int, str]]:
    """(line, expression) of every read of a plan field by string in `source`."""
    reads = _Reads()
    reads.visit(ast.parse(source))
    return sorted(reads.found)


def reads_under(root: Path, folders: tuple[str, ...], *, outside: str) -> Iterator[tuple[str, int, str]]:
    """(file, line, expression) of every such read in `folders` of `root`, except under `outside`."""
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            if relative.startswith(outside):
                continue
            for line, expression in reads_in(path.read_text()):
                yield relative, line, expression
