"""The deployment config refused as it is read (shared/config/deployment.py, shared/config/trackers.py): each
sentence is `deployment config: PATH PROBLEM`, the path in the config and what is wrong there."""

from __future__ import annotations


def config_refused(path: str, problem: str) -> str:
    return f"deployment config: {path} {problem}"


def config_file_missing(path: str) -> str:
    return f"deployment config: file {path} does not exist"


def config_not_yaml(path: str, error: str) -> str:
    return f"deployment config: {path} is not valid YAML: {error}"


# The problems, each said after the path it is found at.
CONFIG_NOT_A_MAPPING = "must be a mapping"
CONFIG_NO_POOLS = "must map at least one pool name to its nodes"
CONFIG_NODE_UNNAMED = "needs a name"
CONFIG_DEVICE_KIND = "must be cpu or cuda"
CONFIG_WHOLE_AT_LEAST_ONE = "must be a whole number of at least 1"
CONFIG_HOST = "must be a host name or IP address"
CONFIG_POOL_WITHOUT_NODES = "must list at least one node"
CONFIG_PUBLIC_URL = ("must be the http(s) address clients reach the API at, such as "
                     "https://trainer.example.com (no query, fragment or credentials)")
CONFIG_IMPORT_ROOTS = "must be a list of absolute directory paths"
CONFIG_REWARD_FUNCTIONS = 'must map reward function names to "package.module:function"'
CONFIG_REWARD_REFERENCE = 'must be "package.module:function"'
CONFIG_SECONDS = "must be a number of seconds above 0"
CONFIG_NON_EMPTY_STRING = "must be a non-empty string"
CONFIG_TRACKERS = "must be a mapping (reportTo, mlflow, wandb)"
CONFIG_TRACKERS_SETTING = "is not a setting of trackers (reportTo, mlflow, wandb)"
CONFIG_MLFLOW_SETTING = "is not a setting of mlflow (trackingUri, experiment)"
CONFIG_WANDB_SETTING = "is not a setting of wandb (project, entity, mode)"


def config_node_repeated(name: str) -> str:
    return f"repeats node name {name}"


def config_pool_undeclared(pool: str) -> str:
    return f"names pool {pool}, which is not declared"


def config_workload_invalid(workload: str, rule: str) -> str:
    return f"names workload {workload!r}; {rule}"


def config_trackers_list(known: list[str]) -> str:
    return f"must be a list of tracker names ({', '.join(known)})"


def config_tracker_unknown(name: str, known: list[str]) -> str:
    return f"names {name}, which is not a tracker ({', '.join(known)})"


def config_tracker_setting_needed(tracker: str) -> str:
    return f"must be set when trackers.reportTo names {tracker}"


def config_wandb_mode(mode: object) -> str:
    return f"must be online or offline, not {mode!r}"
