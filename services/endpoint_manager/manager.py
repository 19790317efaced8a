"""One node's endpoint manager: each pass, every endpoint whose claim is granted on this node gets
one decision (decide.py) from its stored document and a probe of its serving process, and the
manager carries it out: start, mark ready, restart, fail, stop, release the claim.

Only one manager acts for a node at a time: it holds `node:NODE:endpoint-manager` (a token with a
TTL, renewed every pass); another manager for the same node waits on standby. Every phase change
is one write of the decision's facts (shared/lifecycle/endpoints.py derives the phase from them and
checks the edge) made only if the phase is still the one the decision was made on, so a change
that raced with another writer is dropped, never forced.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import time
from collections import Counter
from typing import Any

import redis
import structlog

from services.endpoint_manager import supervisor
from services.endpoint_manager.decide import Action, Decision, Probe, decide
from shared import reasons
from shared.claims.queue import ClaimQueue
from shared.config.deployment import DeploymentConfig
from shared.errors import ValidationFailed
from shared.lifecycle import endpoints as endpoint_lifecycle
from shared.lifecycle.endpoints import idle_expired, process_lost
from shared.lifecycle.states import EndpointPhase
from shared.models.catalog import Catalog
from shared.models.load_spec import LoadSpec, load_spec_for
from shared.rewards.judges import judge_in_use
from shared.snapshots.files import damage_of
from shared.store import leases
from shared.store.artifacts import ArtifactRoot, join
from shared.store.documents import Store
from shared.store.keys import Keys
from shared.store.times import now_iso

MANAGER_LEASE_MS = 15_000  # a manager that stops renewing is replaced after this long
JUDGE_CHECK_EVERY_S = 2.0  # how often an idle judge looks again for runs that use it


class EndpointManager:
    def __init__(self, *, config: DeploymentConfig, client: redis.Redis, node: str, log: Any = None,
                 bind_host: str | None = None, advertise_host: str | None = None, lease_ms: int = MANAGER_LEASE_MS):
        self.pool = config.pool_of_node(node)
        self.node_config = config.node(node)
        if self.pool is None:
            raise ValueError(f"node {node} is not declared in the deployment config")
        # Serving processes listen on `bind_host`; their address names `advertise_host`: how the API
        # and the other nodes (a grpo run's judge) reach this node. Both default to the node's
        # `host` in the deployment config (issue 27), else to this machine's loopback.
        host = self.node_config.host
        bind_host = bind_host or host or "127.0.0.1"
        self.node, self.bind_host = node, bind_host
        self.advertise_host = advertise_host or host or (
            "127.0.0.1" if bind_host in ("0.0.0.0", "::") else bind_host)
        self.keys = Keys(config.key_prefix)
        self.store = Store(client, self.keys)
        self.queue = ClaimQueue(client, self.keys, config=config)
        self.artifacts = ArtifactRoot(config.artifact_root)
        self.catalog = Catalog(config, self.artifacts, self.store)
        self.log = (log or structlog.get_logger()).bind(node=node)
        self.token = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"
        self.children: dict[str, subprocess.Popen] = {}  # serving processes this manager started
        self.failures: dict[str, int] = {}  # failed probes in a row of READY endpoints
        self._judges: dict[str, tuple[float, bool]] = {}  # endpoint -> (checked at, in use)
        self.lease_ms = lease_ms
        self._acting = False  # held the lease at the last pass

    # --- the pass
    def hold_lease(self) -> bool:
        return leases.hold(self.store.redis, self.keys.endpoint_manager(self.node), self.token, self.lease_ms)

    def run_once(self) -> Counter:
        """One pass over this node's endpoints. Returns how many of each action it took."""
        counts: Counter = Counter()
        if not self.hold_lease():
            self._acting = False
            counts["standby"] += 1
            return counts
        if not self._acting:  # the node was without a manager until now
            self._acting = True
            # A later absence is counted from its own start (services/scheduler/lost_endpoints.py).
            self.store.redis.hdel(self.keys.endpoint_managers_missing(), self.node)
            if reaped := self._reap_orphans():
                counts["reap"] += reaped
        claims = {c["resource"]: c for c in self.queue.held(self.pool.name)
                  if c["kind"] == "endpoint" and c["node"] == self.node}
        for i, endpoint_id in enumerate([*claims, *(e for e in list(self.children) if e not in claims)]):
            if i and not self.hold_lease():  # renewed per endpoint too: a stop may take seconds
                counts["standby"] += 1
                break
            log = self.log.bind(endpoint=endpoint_id)
            try:
                counts[self._one(endpoint_id, claims.get(endpoint_id), log)] += 1
            except (redis.ConnectionError, redis.TimeoutError):  # Redis, not this endpoint: the loop waits
                raise
            except Exception:  # one broken endpoint must not stop the others
                log.exception("endpoint pass failed")
                counts["error"] += 1
        return counts

    def _one(self, endpoint_id: str, claim: dict[str, Any] | None, log: Any) -> str:
        doc = self.store.get(endpoint_id)
        if doc is None:  # deleted outright: stop what still runs (the sweep releases its claim)
            self._forget(endpoint_id, stop=True)
            return "gone"
        if claim and (doc.get("scheduling") or {}).get("claim") not in (None, claim["id"]):
            return "other-claim"
        if claim is None and not EndpointPhase(doc["phase"]).is_terminal:
            if self._left_behind_here(doc):  # moved off this node while this manager was away (hung)
                self._stop_left_behind(doc)
                self._forget(endpoint_id)
                return "reap"
            log.warning("live endpoint without a granted claim on this node; left alone", phase=doc["phase"])
            self._forget(endpoint_id)
            return "unclaimed"
        now = time.time()
        probe = self._probe(doc)
        judge = idle_expired(doc, now) and self._judge_in_use(doc, now)
        decision = decide(doc, probe, now=now, judge_in_use=judge)
        if decision.action is not Action.NOTHING:
            log.info("decision", action=decision.action.value, phase=doc["phase"], alive=probe.alive,
                     answers=probe.answers, failures=probe.failures, exitCode=probe.exit_code)
        self._apply(doc, decision, log)
        if EndpointPhase(doc["phase"]).is_terminal and decision.action is Action.NOTHING:
            self._forget(endpoint_id)
        return decision.action.value

    # --- facts
    def _address(self, doc: dict[str, Any]) -> str | None:
        port = (doc.get("process") or {}).get("port")
        return f"http://{self.advertise_host}:{port}" if port else None

    def _probe(self, doc: dict[str, Any]) -> Probe:
        process, child = doc.get("process") or {}, self.children.get(doc["id"])
        exit_code = None
        if child is not None and child.pid == process.get("pid"):
            exit_code = child.poll()
            alive = exit_code is None
        else:
            alive = supervisor.is_recorded_process(process)
        answers = alive and supervisor.health_ok(self._address(doc))
        failures = 0
        if (doc["phase"] == EndpointPhase.READY or process_lost(doc)) and not answers:
            failures = self.failures.get(doc["id"], 0) + 1
        self.failures[doc["id"]] = failures
        return Probe(alive=alive, answers=answers, failures=failures, exit_code=exit_code)

    def _judge_in_use(self, doc: dict[str, Any], now: float) -> bool:
        checked_at, in_use = self._judges.get(doc["id"], (0.0, False))
        if now - checked_at >= JUDGE_CHECK_EVERY_S:
            in_use = judge_in_use(self.store, doc)
            self._judges[doc["id"]] = (now, in_use)
        return in_use

    # --- carrying a decision out
    def _apply(self, doc: dict[str, Any], decision: Decision, log: Any) -> None:
        action = decision.action
        if action is Action.START:
            self._start(doc, log)
        elif action is Action.READY:
            address = self._address(doc)
            moved = self._record(doc, **endpoint_lifecycle.ready(doc, address), managerMissingSince=None)
            if moved:
                self.store.add_event(doc["id"], reasons.endpoint_ready(address))
                log.info("ready", address=address, pid=doc["process"]["pid"])
        elif action is Action.RESTART:
            self._stop_process(doc)
            moved = self._record(doc, **endpoint_lifecycle.restarting())
            if moved:
                self.store.add_event(doc["id"], reasons.ENDPOINT_PROCESS_LOST, level="warn")
                log.warning("serving process lost; starting it again", pid=(doc.get("process") or {}).get("pid"))
                self._start(moved, log)
        elif action in (Action.FAIL, Action.STOP):
            self._stop_process(doc)
            self._end(doc, decision, log)
        elif action is Action.REAP:
            self._stop_process(doc)
            self._forget(doc["id"])

    def _start(self, doc: dict[str, Any], log: Any) -> None:
        devices = (doc.get("scheduling") or {}).get("devices") or []
        try:
            spec = self.load_spec(doc)
            started = supervisor.start(spec=spec, devices=devices, endpoint_id=doc["id"], artifacts=self.artifacts,
                                       host=self.bind_host, cpu_threads=self.node_config.cpu_threads(len(devices)))
        except Exception as exc:  # a missing model or adapter, a backend that cannot run here
            error = getattr(exc, "message", None) or reasons.error_text(exc)  # a TrainerError's sentence, else its words
            log.warning("serving process did not start", error=error)
            self._end(doc, Decision(Action.FAIL, EndpointPhase.FAILED, reasons.endpoint_could_not_start(error)), log)
            return
        seen_pid = (doc.get("process") or {}).get("pid")

        def record(current: dict[str, Any]) -> dict[str, Any] | None:
            if current["phase"] != EndpointPhase.STARTING or (current.get("process") or {}).get("pid") != seen_pid:
                return None
            current["process"] = started.process
            current["startingSince"] = current.get("startingSince") or now_iso()
            return current

        if self.store.update(doc["id"], record).get("process") != started.process:
            supervisor.stop(started.popen.pid, popen=started.popen)  # it moved on meanwhile
            return
        self.children[doc["id"]] = started.popen
        self.failures.pop(doc["id"], None)
        process = started.process
        self.store.add_event(doc["id"], reasons.endpoint_process_started(
            pid=process["pid"], port=process["port"], backend=process["backend"]))
        log.info("serving process started", pid=process["pid"], port=process["port"], backend=process["backend"],
                 log=process["log"])

    def load_spec(self, doc: dict[str, Any]) -> LoadSpec:
        """How the endpoint's serving process loads its model. It answers to the endpoint's id: as the
        base model's served name, or, serving a snapshot, as the adapter's name (the base then goes
        by `servedModel`, the catalog id), so an answer through the trainer already names the id."""
        devices = (doc.get("scheduling") or {}).get("devices") or []
        return load_spec_for(entry=self.catalog.raw(doc["model"]), artifacts=self.artifacts,
                             adapters=self._adapters(doc), served_model_name=doc.get("servedModel") or doc["id"],
                             device=supervisor.device_kind(devices))

    def _adapters(self, doc: dict[str, Any]) -> dict[str, str] | None:
        if not doc.get("snapshot"):
            return None
        snap = self.store.require(doc["snapshot"], "snapshot")
        found = damage_of(self.artifacts, snap, "weights", deep=True)  # not a loader's riddle later
        if found is not None:
            raise ValidationFailed(reasons.snapshot_damaged(snap["id"], found.file, found.problem))
        weights = (snap.get("contents") or {}).get("weights") or {}
        directory = self.artifacts.get_dir(join(snap["path"], weights.get("path", "adapter")))
        return {doc.get("adapterName") or snap["id"]: str(directory)}

    def _end(self, doc: dict[str, Any], decision: Decision, log: Any) -> None:
        failed = decision.phase == EndpointPhase.FAILED
        if self._record(doc, **endpoint_lifecycle.ended(detail=decision.detail, failed=failed)) is None:
            return
        claim_id = (doc.get("scheduling") or {}).get("claim")
        if claim_id:
            self.queue.release(claim_id)
        self.store.add_event(doc["id"], decision.detail, level="error" if failed else "info")
        (log.warning if failed else log.info)("endpoint ended", phase=decision.phase.value, detail=decision.detail)
        self._forget(doc["id"])

    def _record(self, seen: dict[str, Any], **facts: Any) -> dict[str, Any] | None:
        """Record the facts of a decision, its phase derived from them (shared/lifecycle/endpoints.py),
        only if the endpoint is still in the phase the decision was made on; None when it moved on
        meanwhile (or is gone)."""
        return endpoint_lifecycle.record(self.store, seen["id"], expect={seen["phase"]}, **facts)

    def _reap_orphans(self) -> int:
        """Stop the serving processes of this node's endpoints that ended while no manager ran
        here (the scheduler fails an endpoint whose start timeout passes with no manager,
        services/scheduler/lost_endpoints.py; its claim is released, so no pass would see it), and
        those its endpoints left behind here when the scheduler moved them to another node."""
        ended, _ = self.store.list("ep", limit=1000, where=lambda d: (
            EndpointPhase(d["phase"]).is_terminal and (d.get("scheduling") or {}).get("node") == self.node
            and supervisor.is_recorded_process(d.get("process"))))
        for doc in ended:
            self.log.info("stopping the serving process of an endpoint that ended without a manager",
                          endpoint=doc["id"], phase=doc["phase"], pid=doc["process"]["pid"])
            self._stop_process(doc)
        moved, _ = self.store.list("ep", limit=1000, where=self._left_behind_here)
        for doc in moved:
            self._stop_left_behind(doc)
        return len(ended) + len(moved)

    def _left_behind_here(self, doc: dict[str, Any]) -> bool:
        return any(entry.get("node") == self.node for entry in doc.get("leftBehind") or [])

    def _stop_left_behind(self, doc: dict[str, Any]) -> None:
        """Stop the serving processes `doc` left on this node when it moved (those still running),
        then forget them."""
        mine = [e for e in doc.get("leftBehind") or [] if e.get("node") == self.node]
        for entry in mine:
            if supervisor.is_recorded_process(entry):
                self.log.info("stopping the serving process an endpoint left behind when it moved off this node",
                              endpoint=doc["id"], pid=entry["pid"])
                supervisor.stop(entry["pid"])
        self.store.update(doc["id"], lambda d: {**d, "leftBehind": [
            e for e in d.get("leftBehind") or [] if e.get("node") != self.node]})

    def _stop_process(self, doc: dict[str, Any]) -> None:
        process, child = doc.get("process") or {}, self.children.get(doc["id"])
        if child is not None and child.pid == process.get("pid"):
            supervisor.stop(child.pid, popen=child)
        elif supervisor.is_recorded_process(process):
            supervisor.stop(process["pid"])

    def _forget(self, endpoint_id: str, *, stop: bool = False) -> None:
        child = self.children.pop(endpoint_id, None)
        if stop and child is not None:
            supervisor.stop(child.pid, popen=child)
        self.failures.pop(endpoint_id, None)
        self._judges.pop(endpoint_id, None)

    def close(self, *, stop_processes: bool = False) -> None:
        """Let go of the node; serving processes keep running (the next manager adopts them)
        unless `stop_processes`."""
        if stop_processes:
            held = [c["resource"] for c in self.queue.held(self.pool.name)
                    if c["kind"] == "endpoint" and c["node"] == self.node]
            for doc in self.store.get_many(held):
                self._stop_process(doc)
            for endpoint_id in list(self.children):
                self._forget(endpoint_id, stop=True)
        try:
            leases.release(self.store.redis, self.keys.endpoint_manager(self.node), self.token)
        except redis.RedisError:
            pass  # it expires on its own
