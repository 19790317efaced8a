"""The shape of the house (DEVELOPERS.md, docs/architecture.md), checked rather than trusted:

- no module of one service imports (or names, for `python -m`) a module of another service, not even
  inside a function: what two services share lives in `shared/`;
- `shared/` imports no service, and the CLI imports only `shared/` (it talks to the services over HTTP);
- the training engines reach neither Celery nor Flask, through any chain of the project's own imports;
- the API process never loads torch: a real API process is driven through every read route and
  every submission (tests/architecture_probe.py), then asked what it imported;
- a run plan's fields are read by name only inside shared/plans/ (tests/plan_reads.py); everything
  else reads the typed plan's attributes.

Imports are read from the source (every `import` statement, wherever it is), so a lazy import inside
a function counts like one at the top of a module.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plan_reads import reads_in, reads_under

REPO = Path(__file__).resolve().parent.parent
SERVICES = sorted(p.name for p in (REPO / "services").iterdir() if (p / "__init__.py").is_file())
# A string naming a module of a service, as `python -m services.x.y` or importlib would take it.
SERVICE_MODULE_NAME = re.compile(r"^services\.([a-z_]+)(\.[a-z_.]+)?(:[A-Za-z_]+)?$")


def python_files(folder: str) -> list[Path]:
    return sorted((REPO / folder).rglob("*.py"))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in the file, at any depth."""
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    return imports_in(path.read_text(), package=package)


def imports_in(source: str, *, package: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the file's package
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            found.append((node.lineno, name))
            # `from services import scheduler` imports the module services.scheduler
            found += [(node.lineno, f"{name}.{alias.name}") for alias in node.names if alias.name != "*"]
    return found


def service_named(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "services" and parts[1] in SERVICES else None


def test_no_service_imports_another():
    crossings = []
    for service in SERVICES:
        for path in python_files(f"services/{service}"):
            for line, module in imports_of(path):
                other = service_named(module)
                if other and other != service:
                    crossings.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert crossings == [], "services import each other; move what they share into shared/:\n" + "\n".join(crossings)


def test_no_service_names_another_services_module_to_run():
    """`python -m services.other.module` or importlib with another service's module is an import too."""
    crossings = []
    for service in SERVICES:
        for path in python_files(f"services/{service}"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    found = SERVICE_MODULE_NAME.match(node.value)
                    if found and found.group(1) in SERVICES and found.group(1) != service:
                        crossings.append(f"{path.relative_to(REPO)}:{node.lineno} names {node.value}")
    assert crossings == [], "\n".join(crossings)


@pytest.mark.parametrize("folder", ["shared", "training_cli"])
def test_shared_code_and_the_cli_import_no_service(folder):
    found = [f"{path.relative_to(REPO)}:{line} imports {module}"
             for path in python_files(folder) for line, module in imports_of(path)
             if module == "services" or module.startswith("services.")]
    assert found == [], "\n".join(found)


def project_module(module: str) -> Path | None:
    """The file of a module of this repository, or None for a third-party or standard one."""
    base = REPO.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def reachable(start: list[Path]) -> dict[str, tuple[str, str]]:
    """Every module imported through any chain of project modules from `start`: name -> (the project
    module that imports it, the chain's first file)."""
    seen: dict[str, tuple[str, str]] = {}
    todo = [(path, str(path.relative_to(REPO))) for path in start]
    visited: set[Path] = set()
    while todo:
        path, origin = todo.pop()
        if path in visited:
            continue
        visited.add(path)
        for _, module in imports_of(path):
            seen.setdefault(module, (module_name(path), origin))
            target = project_module(module)
            if target is not None:
                todo.append((target, origin))
    return seen


def test_engines_reach_neither_celery_nor_flask():
    modules = reachable(python_files("services/trainer_worker/engines"))
    found = [f"{module} (imported by {by}, reached from {origin})" for module, (by, origin) in sorted(modules.items())
             if module.split(".")[0] in ("celery", "flask", "werkzeug")]
    assert found == [], "\n".join(found)


def test_the_rules_catch_what_they_forbid():
    """The checks above are not vacuous: lazy and relative imports of another service are found."""
    source = "def f():\n    from services.scheduler import queue\n    import services.api.app\n    from ..api import x\n"
    names = {module for _, module in imports_in(source, package="services.trainer_worker")}
    assert {"services.scheduler", "services.scheduler.queue", "services.api.app", "services.api.x"} <= names
    assert service_named("services.scheduler.queue") == "scheduler"
    assert SERVICE_MODULE_NAME.match("services.endpoint_manager.server").group(1) == "endpoint_manager"


@pytest.mark.e2e
def test_the_api_process_never_imports_torch(redis_url, key_prefix, tmp_path):
    """A real API process (uvicorn, the whole ASGI app) answers every read route and takes every kind
    of submission, including a grpo run whose registered reward module imports torch when run:
    afterwards torch (and what is built on it) is not among its modules, the reward module never ran,
    and no route answered 5xx."""
    marker = tmp_path / "reward-module-ran"
    env = {**os.environ, "TRAINING_TEST_REDIS_URL": redis_url, "PROBE_KEY_PREFIX": key_prefix,
           "PROBE_ARTIFACT_ROOT": str(tmp_path / "artifacts"), "PROBE_MARKER": str(marker),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "tests.architecture_probe"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["heavy"] == [], f"the API imported {report['heavy']}"
    assert report["server_errors"] == {}, report["server_errors"]
    assert not marker.exists(), "the API ran a deployment's reward module to read a signature"
    assert report["static_check"] == {"accepted": 201, "unknown_parameter": 400}
    # every read route of the OpenAPI document was called, with ids of real resources
    assert set(report["read_routes"]) == set(report["called"]), set(report["read_routes"]) - set(report["called"])
    assert not (tmp_path / "artifacts" / "models").exists(), "the API built a model"


# The document fields that hold a resource's state; only shared/lifecycle/ writes them.
STATE_FIELDS = {"status", "phase"}


def state_writes(path: Path) -> list[str]:
    """Where a file writes a state field of a document: `doc["status"] = ...`, `doc.update(phase=...)`,
    `{**doc, "status": ...}`, or a new resource document (a dict literal with a "kind") naming its state.
    A line marked `# read-time view` builds an answer (a comparison's status is derived when read),
    not a document."""
    found = []
    source = path.read_text()
    views = {i for i, line in enumerate(source.splitlines(), start=1) if "# read-time view" in line}
    for node in ast.walk(ast.parse(source)):
        if getattr(node, "lineno", None) in views:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for target in targets:
            if (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant)
                    and target.slice.value in STATE_FIELDS):
                found.append(f"{node.lineno}: assigns [{target.slice.value!r}]")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update":
            found += [f"{node.lineno}: update({k.arg}=...)" for k in node.keywords if k.arg in STATE_FIELDS]
        if isinstance(node, ast.Dict):
            names = {k.value for k in node.keys if isinstance(k, ast.Constant)}
            spread = any(k is None for k in node.keys)
            if names & STATE_FIELDS and (spread or "kind" in names):
                found.append(f"{node.lineno}: a document literal sets {sorted(names & STATE_FIELDS)}")
    return found


def test_each_status_has_one_writer():
    """Run and evaluation statuses and endpoint phases change only through shared/lifecycle/ (which
    checks each edge against the state machine and refuses stale writers)."""
    offenders = [f"{path.relative_to(REPO)}:{where}"
                 for folder in ("services", "shared") for path in python_files(folder)
                 if "lifecycle" not in path.relative_to(REPO).parts for where in state_writes(path)]
    assert offenders == [], "write states through shared/lifecycle/:\n" + "\n".join(offenders)


def test_the_one_writer_rule_sees_each_way_of_writing(tmp_path):
    source = tmp_path / "writer.py"
    source.write_text('doc["status"] = "RUNNING"\ndoc.update(phase="READY")\nnew = {**doc, "status": "X"}\n'
                      'store.create({"id": 1, "kind": "run", "status": "QUEUED"})\nreply = {"status": "ok"}\n')
    assert len(state_writes(source)) == 4  # the answer {"status": "ok"} is no document


# Where a run plan's fields are read by name: only its own package (tests/plan_reads.py says what
# counts). The rest of the project reads `TrainingPlan` attributes.
PLAN_PACKAGE = "shared/plans/"
PLAN_READERS = ("services", "shared", "training_cli", "bench", "scripts")


def test_no_plan_field_is_read_by_string_outside_the_plan_package():
    """A plan field is an attribute of the typed plan everywhere past shared/plans/, so a misspelt
    one fails where it is written, not as a KeyError in a worker after the run was accepted."""
    found = [f"{file}:{line} {expression}"
             for file, line, expression in reads_under(REPO, PLAN_READERS, outside=PLAN_PACKAGE)]
    assert found == [], "read the plan's attributes (shared/plans/training_plan.py):\n" + "\n".join(found)


def test_the_plan_read_rule_sees_each_way_of_reading():
    source = (
        'gpus = plan["execution"]["gpus"]\n'                     # 2: the part, then its field
        'lr = job.plan.get("hyperparameters", {})\n'              # 1
        'model = (run.get("plan") or {}).get("model")\n'          # 1: a document's plan
        'def f(plan):\n'
        '    hp = plan["hyperparameters"]\n'                     # 1, and hp is a part of the plan
        '    return hp["batchSize"], hp.get("seed")\n'            # 2
        'x = kit.setting(plan, "precision")\n'                   # 1
        'y = plan_default("grpo", "numGenerations")\n'           # 1
        'parent_plan["restore"] = None\n'                        # 1: written by name, as typo-prone
        'ok = run["plan"]\n'                                     # 0: the whole plan, for from_dict
        'fine = plan.hyperparameters.batch_size, body["method"], other["x"]\n'  # 0
    )
    assert [line for line, _ in reads_in(source)] == [1, 1, 2, 3, 5, 6, 6, 7, 8, 9]


def test_artifacts_are_reached_only_through_the_store_interface():
    """Nothing outside shared/store/artifacts.py uses the local disk's own paths of the artifact store
    (`.path`, `.root`, `.key`): every read and write goes through the ArtifactStore methods, so an
    S3-like store can replace the disk."""
    found = []
    for folder in ("services", "shared", "training_cli"):
        for path in python_files(folder):
            if path == REPO / "shared" / "store" / "artifacts.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Attribute) and node.attr in ("path", "root", "key"):
                    owner = node.value.attr if isinstance(node.value, ast.Attribute) else getattr(node.value, "id", "")
                    if owner == "artifacts":
                        found.append(f"{path.relative_to(REPO)}:{node.lineno} uses {owner}.{node.attr}")
    assert found == [], "\n".join(found)


@pytest.mark.parametrize("folder", [*(f"services/{s}" for s in SERVICES), "shared", "training_cli", "bench"])
def test_each_folder_readme_names_every_module(folder):
    """Docs that match the code: a module added to a service (or to shared/, or the CLI) is named in
    that folder's README, where its terms and state diagrams are."""
    readme = (REPO / folder / "README.md").read_text()
    unnamed = [str(path.relative_to(REPO / folder)) for path in python_files(folder)
               if path.name != "__init__.py" and f"`{path.name}`" not in readme
               and str(path.relative_to(REPO / folder)) not in readme]
    assert unnamed == [], f"{folder}/README.md does not name {unnamed}"
