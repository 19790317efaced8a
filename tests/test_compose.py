"""No Docker engine runs here: check docker-compose.yml by reading it. Every service of the
project's image must start a real entry point of the project."""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def services():
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]


def test_compose_has_the_services_of_the_local_cluster():
    names = set(services())
    assert {"redis", "api", "scheduler", "flower"} <= names
    assert any(n.startswith("worker") for n in names)
    redis_cmd = services()["redis"]["command"]
    assert "--appendonly" in redis_cmd and redis_cmd[redis_cmd.index("--appendonly") + 1] == "yes"


def test_every_service_is_started_again_when_it_dies():
    """Compose brings a dead service back only when told to (issue 14, "Faults"); `unless-stopped`
    leaves one an operator stopped on purpose alone."""
    assert {name: spec.get("restart") for name, spec in services().items()} == {
        name: "unless-stopped" for name in services()}


def test_every_command_names_a_real_entry_point():
    checked = 0
    for name, spec in services().items():
        command = spec.get("command")
        if name == "redis":
            continue
        assert command, f"service {name} has no command"
        if command[:2] == ["python", "-m"]:
            module = importlib.import_module(command[2])
            assert callable(getattr(module, "main", None)), f"{command[2]} has no main()"
            assert "if __name__ == \"__main__\":" in Path(module.__file__).read_text()
        elif command[0] == "celery":
            target = command[command.index("-A") + 1]
            assert importlib.util.find_spec(target) is not None, f"{target} does not exist"
            source = Path(importlib.util.find_spec(target).origin).read_text()
            assert "app = make_celery(" in source
        else:
            raise AssertionError(f"service {name} runs {command[0]}, which is not an entry point of the project")
        checked += 1
    assert checked >= 4


def test_worker_node_is_declared_in_the_compose_deployment_config():
    config = yaml.safe_load((REPO / "deploy/deployment.yaml").read_text())
    nodes = {n["name"] for pool in config["pools"].values() for n in pool["nodes"]}
    for name, spec in services().items():
        if name.startswith("worker"):
            assert spec["command"][spec["command"].index("--node") + 1] in nodes


def test_no_secret_has_a_default_and_nothing_is_open_without_one():
    """Compose would publish the API with `change-me` and Flower without auth (issue 14): every
    secret is a required variable (`${VAR:?...}`: compose refuses to start without it), Redis needs
    its password and has the dangerous commands off, Flower needs basic auth and binds to loopback."""
    text = (REPO / "docker-compose.yml").read_text()
    assert "change-me" not in text and ":-" not in text  # no variable with a default
    trainer = services()["api"]["environment"]
    assert trainer["TRAINING_ADMIN_TOKEN"].startswith("${TRAINING_ADMIN_TOKEN:?")
    assert trainer["TRAINING_REDIS_URL"].startswith("redis://:${TRAINING_REDIS_PASSWORD:?")
    redis_cmd = services()["redis"]["command"]
    assert redis_cmd[redis_cmd.index("--requirepass") + 1].startswith("${TRAINING_REDIS_PASSWORD:?")
    renamed = {redis_cmd[i + 1] for i, arg in enumerate(redis_cmd) if arg == "--rename-command"}
    assert {"CONFIG", "MODULE", "DEBUG", "FLUSHALL"} <= renamed
    assert "ports" not in services()["redis"]
    flower = services()["flower"]
    assert flower["environment"]["FLOWER_BASIC_AUTH"].startswith("${FLOWER_BASIC_AUTH:?")
    # Flower's own command leaves /metrics open; the gate requires the auth on every route (issue 26)
    assert flower["command"][:3] == ["python", "-m", "services.trainer_worker.flower_gate"]
    assert all(port.startswith("127.0.0.1:") for port in flower["ports"])
    for name, spec in services().items():  # only the API checks tokens (issue 26)
        assert ("TRAINING_ADMIN_TOKEN" in (spec.get("environment") or {})) == (name == "api"), name
    for name, spec in services().items():
        url = (spec.get("environment") or {}).get("TRAINING_REDIS_URL")
        assert name == "redis" or url is None or "${TRAINING_REDIS_PASSWORD:?" in url, name


def test_every_node_of_the_compose_config_has_its_worker_and_endpoint_manager():
    """Issue 27, item 6: compose runs two nodes, each with both its services; each manager advertises
    the address of its own service (the API reaches its serving processes there)."""
    config = yaml.safe_load((REPO / "deploy/deployment.yaml").read_text())
    nodes = [n["name"] for pool in config["pools"].values() for n in pool["nodes"]]
    assert len(nodes) >= 2
    workers, managers = {}, {}
    for name, spec in services().items():
        command = spec.get("command") or []
        if command[:3] == ["python", "-m", "services.trainer_worker.worker"]:
            workers[command[command.index("--node") + 1]] = name
        if command[:3] == ["python", "-m", "services.endpoint_manager.main"]:
            managers[command[command.index("--node") + 1]] = name
            assert command[command.index("--advertise-host") + 1] == name
    assert sorted(workers) == sorted(managers) == sorted(nodes)
