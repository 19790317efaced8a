"""The environment a process of the trainer gives its children (shared/process/child_env.py): an allow-list,
so the trainer's secrets and other tools' credentials stay with the parent (issue 26)."""

from __future__ import annotations

from shared.process.child_env import child_env, passed, with_python_path

PARENT = {
    "PATH": "/usr/bin", "HOME": "/home/t", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "2",
    "CUDA_VISIBLE_DEVICES": "0", "HF_HUB_CACHE": "/hf", "HF_TOKEN": "hub-credential", "PYTHONPATH": "/repo",
    "TRAINING_LOG_LEVEL": "INFO",
    # never a child's
    "TRAINING_ADMIN_TOKEN": "admin-secret", "TRAINING_REDIS_URL": "redis://:pw@127.0.0.1:6379/0",
    "TRAINING_TOKEN": "cli-token", "TRAINING_CONFIG": "/etc/trainer.yaml", "WANDB_API_KEY": "w",
    "MLFLOW_TRACKING_PASSWORD": "m", "AWS_SECRET_ACCESS_KEY": "a", "FLOWER_BASIC_AUTH": "u:p",
}


def test_a_child_gets_the_allow_list_and_what_its_caller_adds():
    env = child_env({"TRAINING_SERVING_API_KEY": "its-own-key", "OMP_NUM_THREADS": "1"}, parent=PARENT)
    assert env == {"PATH": "/usr/bin", "HOME": "/home/t", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
                   "OMP_NUM_THREADS": "1", "CUDA_VISIBLE_DEVICES": "0", "HF_HUB_CACHE": "/hf",
                   "HF_TOKEN": "hub-credential", "PYTHONPATH": "/repo", "TRAINING_LOG_LEVEL": "INFO",
                   "TRAINING_SERVING_API_KEY": "its-own-key"}
    assert not any(passed(name) for name in ("TRAINING_ADMIN_TOKEN", "TRAINING_REDIS_URL", "TRAINING_TOKEN",
                                             "WANDB_API_KEY", "MLFLOW_TRACKING_PASSWORD", "AWS_SECRET_ACCESS_KEY"))


def test_the_trainers_code_goes_first_on_the_python_path():
    assert with_python_path({"PYTHONPATH": "/site"}, "/repo")["PYTHONPATH"] == "/repo:/site"
    assert with_python_path({}, "/repo")["PYTHONPATH"] == "/repo"
