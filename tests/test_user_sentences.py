"""What users are told has one owner (issue 28, item 2): a sentence a user can read is a constant or a
formatter of shared/reasons/, not words spelled where an error is raised or an event written; and
no user reads a Python class name (the code that formats errors for users is checked here, what
tests leave in details and events by tests/conftest.py).

Read from the source, as tests/test_architecture.py reads imports. An inline sentence is a string
literal (or f-string, or literal joined with `+` or `%`) holding at least one space, given as the
message of:
- a raise of the project's error types (every exception class the project defines: shared/errors.py's
  `TrainerError` family, the CLI's `CliError`, `ImageRefused`, the worker's
  `WorkFailed`, ...), and of the built-in exceptions the trainer worker raises, whose message a
  failed run or evaluation shows;
- an event (`add_event(id, message)`, `reporter.event(message)`), a `detail=` stored on a resource,
  an error answer of a serving process (`error_body(status, message)`), and the phrase given to a
  helper that raises with it (`_fail(path, problem)`, `_refuse(problem)`, `_refusal(name, why)`).
What the CLI prints with click.echo (tables, progress lines) is not counted.

The count is held per file (ALLOWED): a new inline sentence fails here, and so does a file whose
count went down without its allowance being lowered, so that the line only moves one way. Run this module as a script
(`python -m tests.test_user_sentences`) to print the counts and every inline sentence.
"""

from __future__ import annotations

import ast
import builtins
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("services", "shared", "training_cli")
OWNER = REPO / "shared" / "reasons"

# Calls whose message argument (by position) a user reads: events, a serving process's error
# answer, and the helpers that raise with the phrase they are given (shared/config/deployment.py and
# shared/config/trackers.py `_fail(path, problem)`, snapshot_members' and json_values' `_refuse`,
# adapter_fold's `_refusal(name, why)`).
MESSAGE_CALLS = {"add_event": 1, "event": 0, "error_body": 1, "_fail": 1, "_refuse": 0, "_refusal": 1}
# Built-in exceptions whose message reaches a user when the trainer worker raises them: a run's or an
# evaluation's failure detail.
WORKER = REPO / "services" / "trainer_worker"
BUILTIN_ERRORS = {name for name, value in vars(builtins).items()
                  if isinstance(value, type) and issubclass(value, BaseException)}
# The project's exceptions that carry no sentence for a user: their message goes to a log, the
# user reads another sentence (or nothing) where they are caught. A lost lease or a stale write
# stops the work quietly (services/trainer_worker/lease.py); an unreachable serving process is
# answered with reasons.ENDPOINT_PROCESS_UNREACHABLE or the endpoint's phase (services/api/proxy.py);
# an unsafe artifact key with a 404; a cancel while starting with reasons.CANCELLED_BY_USER.
LOG_ONLY_ERRORS = {"LeaseLost", "StaleWriter", "UpstreamUnreachable", "ProcessGone", "UnsafeKey",
                   "CancelledWhileStarting"}


def python_files() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py") if OWNER not in p.parents)


def project_error_types() -> set[str]:
    """The name of every exception class the project defines (a class whose base is an exception,
    built-in or the project's own, or click's ClickException), found to a fixed point."""
    classes: dict[str, list[str]] = {}
    for path in python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "") for b in node.bases]
                classes.setdefault(node.name, []).extend(bases)
    errors = set(BUILTIN_ERRORS) | {"ClickException", "HTTPException"}
    while True:
        more = {name for name, bases in classes.items() if name not in errors and any(b in errors for b in bases)}
        if not more:
            return (errors & set(classes)) - LOG_ONLY_ERRORS
        errors |= more


def has_words(node: ast.AST) -> bool:
    """A literal sentence: a string constant, f-string, or literal joined with + / % (or .format)
    whose literal text holds a space."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and " " in node.value
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.Constant) and " " in str(v.value) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return has_words(node.left) or has_words(node.right)
    if isinstance(node, ast.IfExp):
        return has_words(node.body) or has_words(node.orelse)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return has_words(node.func.value)
    return False


def called_name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def inline_sentences(path: Path, errors: set[str]) -> list[tuple[int, str]]:
    """(line, what) of every inline sentence in one file."""
    found = []
    raising = errors | (BUILTIN_ERRORS if WORKER in path.parents else set())
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            call = node.exc
            if called_name(call) in raising:
                messages = [*call.args, *(k.value for k in call.keywords if k.arg == "message")]
                if any(has_words(m) for m in messages):
                    found.append((node.lineno, f"raise {called_name(call)}"))
        elif isinstance(node, ast.Call):
            name = called_name(node)
            position = MESSAGE_CALLS.get(name)
            if position is not None and len(node.args) > position and has_words(node.args[position]):
                found.append((node.lineno, f"{name}(...)"))
            found += [(node.lineno, "detail=") for k in node.keywords if k.arg == "detail" and has_words(k.value)]
    return sorted(found)


def counts() -> Counter:
    errors = project_error_types()
    return Counter({str(p.relative_to(REPO)): n for p in python_files() if (n := len(inline_sentences(p, errors)))})


# Inline sentences left per file; lower an entry when a file's sentences move into shared/reasons/.
ALLOWED: dict[str, int] = {
    # an internal check of a job the worker built itself (restore.what is checked at submission)
    "services/trainer_worker/engines/base.py": 1,
}


def test_no_new_inline_sentence():
    now = counts()
    grown = {f: f"{n} (allowed {ALLOWED.get(f, 0)})" for f, n in now.items() if n > ALLOWED.get(f, 0)}
    assert grown == {}, ("words a user reads are spelled inline; make each a constant or formatter of "
                         f"shared/reasons/ (python -m tests.test_user_sentences lists them): {grown}")


def test_the_allowance_follows_the_count_down():
    now = counts()
    stale = {f: f"{now.get(f, 0)} (allowed {n})" for f, n in ALLOWED.items() if now.get(f, 0) < n}
    assert stale == {}, f"fewer inline sentences than allowed: lower ALLOWED to the new counts: {stale}"


def test_the_rule_sees_each_way_of_spelling_a_sentence(tmp_path):
    source = tmp_path / "raiser.py"
    source.write_text(
        'raise ValidationFailed(f"pool {p} does not exist")\n'
        'raise NotFound("no such thing", details={})\n'
        'raise CliError(message="the " + what + " is wrong")\n'
        'store.add_event(run_id, "cancelled by the user")\n'
        'reporter.event(f"restoring {what}")\n'
        'move(store, RUNS, "FAILED", detail="failed for a reason")\n'
        # not sentences: built in reasons, a field name, no words, details
        'raise ValidationFailed(reasons.pool_unknown(p), details={"field": "pool"})\n'
        'raise ImageRefused("image_url.url", problem)\n'
        'raise Conflict(message)\n'
        'reporter.event(reasons.granted(gpus=1, node="n", devices=[]))\n')
    found = inline_sentences(source, {"ValidationFailed", "NotFound", "CliError", "ImageRefused", "Conflict"})
    assert [line for line, _ in found] == [1, 2, 3, 4, 5, 6]


def test_the_project_error_types_are_found():
    errors = project_error_types()
    assert {"TrainerError", "ValidationFailed", "NotFound", "CliError", "ApiError", "ImageRefused",
            "WorkFailed"} <= errors
    assert "LeaseLost" not in errors  # its message goes to a log only


LOG_METHODS = {"debug", "info", "warning", "warn", "error", "exception", "critical", "msg"}


def class_names_formatted(path: Path) -> list[tuple[int, str]]:
    """(line, what) of every place that turns a caught exception's class into text (`type(exc).__name__`,
    `exc.__class__.__name__`, `repr(exc)`, `{exc!r}`) outside a call to a logger: text a user could read."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def logged(node: ast.AST) -> bool:
        """Inside a logger's call, or the message of a log-only exception."""
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.Call) and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr in LOG_METHODS)
                    or called_name(node) in LOG_ONLY_ERRORS):
                return True
        return False

    found = []
    for handler in ast.walk(tree):
        if not (isinstance(handler, ast.ExceptHandler) and handler.name):
            continue
        name = handler.name
        for node in ast.walk(handler):
            named = None
            if isinstance(node, ast.Attribute) and node.attr == "__name__":
                inner = node.value
                if isinstance(inner, ast.Call) and getattr(inner.func, "id", "") == "type" and inner.args \
                        and getattr(inner.args[0], "id", "") == name:
                    named = "type(...).__name__"
                elif isinstance(inner, ast.Attribute) and inner.attr == "__class__" and getattr(inner.value, "id", "") == name:
                    named = "__class__.__name__"
            elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "repr" and node.args \
                    and getattr(node.args[0], "id", "") == name:
                named = "repr(...)"
            elif isinstance(node, ast.FormattedValue) and node.conversion == ord("r") \
                    and getattr(node.value, "id", "") == name:
                named = "{...!r}"
            if named and not logged(node):
                found.append((node.lineno, named))
    return sorted(found)


def test_no_exception_class_name_is_formatted_for_a_user():
    found = [f"{p.relative_to(REPO)}:{line} {what}" for p in python_files() for line, what in class_names_formatted(p)]
    assert found == [], ("a caught exception's class name becomes text a user may read; say it in words "
                         "(reasons.error_text, shared/errors.WorkFailed.of):\n" + "\n".join(found))


def test_the_class_name_rule_sees_each_way_of_naming_a_class(tmp_path):
    source = tmp_path / "formats.py"
    source.write_text(
        "try:\n    pass\nexcept Exception as exc:\n"
        "    detail = f'failed: {type(exc).__name__}: {exc}'\n"  # 4
        "    other = exc.__class__.__name__\n"  # 5
        "    third = repr(exc)\n"  # 6
        "    fourth = f'{exc!r}'\n"  # 7
        "    log.warning('failed', error=f'{type(exc).__name__}: {exc}')\n"  # 8: a log line, allowed
        "    shown = type(model).__name__\n")  # 9: not the exception's class
    assert [line for line, _ in class_names_formatted(source)] == [4, 5, 6, 7]


if __name__ == "__main__":
    errors = project_error_types()
    total = 0
    for path in python_files():
        for line, what in inline_sentences(path, errors):
            print(f"{path.relative_to(REPO)}:{line}: {what}")
            total += 1
    print()
    for file, n in sorted(counts().items()):
        print(f"    {file!r}: {n},")
    print(f"{total} inline sentences in {len(counts())} files")
