"""The test tree's own rules (tests/README.md), checked rather than trusted:
- a test module sits under the folder of the source it tests: tests/P/test_x.py tests the source
  folder services/P where that exists, else P (tests/trainer_worker/engines/ -> services/trainer_worker/
  engines/, tests/shared/plans/ -> shared/plans/, tests/training_cli/ -> training_cli/, tests/bench/ ->
  bench/); the exceptions are the trees that drive the product whole (WHOLE) and the modules directly
  under tests/ that check the repository itself (REPOSITORY). Helpers, doubles and conftest.py files
  are not test modules and may sit where their importers find them;
- every folder of test code is a package (an __init__.py), so that tests import each other by one
  dotted name (`tests.trainer_worker.doubles`) and two test files of one name never collide;
- a test marked `requires_cuda` skips, saying why, where torch sees no CUDA GPU (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"

# Test trees of no one source folder: what they drive, in words.
WHOLE = {
    "e2e": "the services started together as a deployment runs them, through the API and the CLI",
    "ui": "the dashboard in a real browser against a running stack",
}
# Test modules directly under tests/: they read the repository as a whole.
REPOSITORY = {"test_architecture.py", "test_compose.py", "test_layout.py", "test_user_sentences.py"}


def source_folder(folder: Path) -> Path:
    """The source folder tests/`folder` tests: services/`folder` where that exists, else `folder`."""
    under_services = REPO / "services" / folder
    return under_services if under_services.is_dir() else REPO / folder


def misplaced(test_modules: list[Path]) -> list[str]:
    """Each test module (a path relative to tests/) that names no source folder, with why."""
    found = []
    for module in test_modules:
        if len(module.parts) == 1:
            if module.name not in REPOSITORY:
                found.append(f"tests/{module}: move it under the folder of what it tests (or list it in REPOSITORY)")
            continue
        if module.parts[0] in WHOLE:
            continue
        source = source_folder(module.parent)
        if not any(source.glob("*.py")):
            found.append(f"tests/{module}: neither services/{module.parent.as_posix()}/ nor "
                         f"{module.parent.as_posix()}/ holds Python source")
    return found


def modules_under_tests() -> list[Path]:
    return sorted(path.relative_to(TESTS) for path in TESTS.rglob("test_*.py") if "__pycache__" not in path.parts)


def test_every_test_module_sits_under_the_folder_of_the_source_it_tests():
    assert len(modules_under_tests()) > 100  # the walk found the tree
    assert misplaced(modules_under_tests()) == []


def test_the_rule_names_what_breaks_it():
    # the layout before issue 28 moved it: tests/cli/ (the source is training_cli/) and a bench test at the top
    assert misplaced([Path("cli/test_output.py"), Path("test_gpu_check.py"), Path("trainer_worker/engines/test_x.py"),
                      Path("shared/plans/test_x.py"), Path("training_cli/test_x.py"), Path("e2e/test_x.py")]) == [
        "tests/cli/test_output.py: neither services/cli/ nor cli/ holds Python source",
        "tests/test_gpu_check.py: move it under the folder of what it tests (or list it in REPOSITORY)"]


def test_every_folder_of_test_code_is_a_package():
    folders = {path.parent for path in TESTS.rglob("*.py") if "__pycache__" not in path.parts}
    assert sorted(str(f.relative_to(REPO)) for f in folders if not (f / "__init__.py").is_file()) == []


def test_requires_cuda_is_registered_and_skips_saying_why_without_cuda(tmp_path):
    markers = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["markers"]
    assert any(m.startswith("requires_cuda: ") for m in markers)
    # CUDA hidden from torch, so the test skips on a GPU machine too; --strict-markers: an
    # unregistered marker would be an error, not a warning
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    module = "tests/trainer_worker/engines/test_sft_engine.py"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "--strict-markers", "-p", "no:cacheprovider",
                           f"--basetemp={tmp_path}", "-m", "requires_cuda", module],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(rf"^SKIPPED \[1\] {re.escape(module)}:\d+: needs a CUDA GPU, and torch \S+ "
                     r"\((built for CUDA \S+|a CPU-only build)\) sees none here$", done.stdout, re.M), done.stdout
    assert re.search(r"^1 skipped, \d+ deselected", done.stdout, re.M), done.stdout
