"""bench/gpu_run.sh, what the device call runs, here on CPU: it installs the carried wheels, prints
the machine and the versions (nvidia-smi absent is said, not fatal), runs its command, keeps all of
it in $OUT/NAME.log and exits with the command's status; and bench/gpu_wheels.sh's list is this
project's pins, one version of each (its download needs PyPI: run by hand, docs/gpu-check.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _probe_wheel(folder: Path) -> Path:
    """A one-module wheel (gpu_run_probe 1.0) for the install step."""
    wheel = folder / "gpu_run_probe-1.0-py3-none-any.whl"
    info = "gpu_run_probe-1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("gpu_run_probe/__init__.py", "VALUE = 42\n")
        zf.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: gpu-run-probe\nVersion: 1.0\n")
        zf.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{info}/RECORD", f"gpu_run_probe/__init__.py,,\n{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    return wheel


def _gpu_run(tmp_path: Path, name: str, *command: str, wheels: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPU_RUN_PYTHON": sys.executable, "GPU_RUN_SITE": str(tmp_path / "site"),
           "GPU_RUN_WHEELS": str(wheels), "OUT": str(tmp_path / "out")}
    return subprocess.run(["bash", "bench/gpu_run.sh", name, *command], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=600)


def test_gpu_run_installs_the_carried_wheels_and_exits_with_its_commands_status(tmp_path):
    wheels = tmp_path / "whl"
    wheels.mkdir()
    _probe_wheel(wheels)
    done = _gpu_run(tmp_path, "probe", "python", "-c",
                    "import gpu_run_probe, sys; print('probe', gpu_run_probe.VALUE, gpu_run_probe.__file__); sys.exit(3)",
                    wheels=wheels)
    assert done.returncode == 3, done.stdout + done.stderr
    log = (tmp_path / "out" / "probe.log").read_text()
    assert log == done.stdout  # everything printed is kept
    assert f"gpu_run: installing 1 wheels from {wheels} into {tmp_path / 'site'}" in log
    assert f"probe 42 {tmp_path / 'site' / 'gpu_run_probe' / '__init__.py'}" in log
    assert ("gpu_run: nvidia-smi: absent" in log) == (shutil.which("nvidia-smi") is None)
    assert re.search(r"^torch \S+, CUDA \S+, cuDNN \S+, CUDA available (True|False)", log, re.M)
    for name in ("transformers", "peft", "trl", "accelerate", "datasets", "tokenizers"):
        assert re.search(rf"^{name} \d+\.\d+\S* \(", log, re.M), name
    assert f"gpu_run: running {sys.executable} -c " in log  # `python` is the machine's python
    assert "gpu_run: probe exited with 3 after " in log
    # a second command in the same device call finds the same wheels installed
    again = _gpu_run(tmp_path, "probe-2", "python", "-c", "import gpu_run_probe; print('again', gpu_run_probe.VALUE)",
                     wheels=wheels)
    assert again.returncode == 0, again.stdout + again.stderr
    assert f"gpu_run: the 1 wheels of {wheels} are already installed in {tmp_path / 'site'}" in again.stdout
    assert "\nagain 42\n" in again.stdout


def test_gpu_run_runs_the_gpu_checks_dry_run_as_the_device_call_does(tmp_path):
    # the device call's command, on CPU: `python bench/gpu_check.py` (here --dry-run, one quick check)
    done = _gpu_run(tmp_path, "gpu-check", "python", "bench/gpu_check.py", "--dry-run", "--checks", "sft-fp16",
                    wheels=tmp_path / "none")
    assert done.returncode == 0, done.stdout + done.stderr
    log = (tmp_path / "out" / "gpu-check.log").read_text()
    assert f"gpu_run: no wheels in {tmp_path / 'none'}: nothing installed" in log
    assert "\ngpu check on cpu: 0 passed, 0 failed, 1 skipped in " in log


def test_gpu_run_refuses_a_call_without_a_command():
    done = subprocess.run(["bash", "bench/gpu_run.sh", "only-a-name"], cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stderr == "usage: bash bench/gpu_run.sh NAME CMD...\n"


def test_the_carried_wheels_are_this_projects_pins_one_version_each():
    import tomllib

    script = (REPO / "bench" / "gpu_wheels.sh").read_text()
    carried = dict(re.findall(r"^  ([a-z0-9_.-]+)==(\S+)", script, re.M))
    assert len(carried) == len(re.findall(r"^  [a-z0-9_.-]+==", script, re.M))  # one version of each name
    pins = dict(dep.split("==") for dep in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
                ["dependencies"] if "==" in dep)
    # what the check trains with is what CI tests: the project's pins, wherever it pins
    assert {"transformers", "peft", "trl", "datasets"} <= set(carried)
    assert {name: carried[name] for name in carried if name in pins} == {
        name: pins[name] for name in carried if name in pins}
    assert "torch" not in carried and "accelerate" not in carried  # the image's: 2.11 (CUDA), 1.15.0 (the pin)
