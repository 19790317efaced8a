"""Carry out one granted evaluation claim on this node (SPEC 2.5): take the lease, load the model
through the shared load spec, score the rows, write the per-row results, end the evaluation and
give the GPUs back. Plain Python: `leased_work.execute` calls `evaluate` for kind "evaluation",
holding its lease (`leased_work.with_lease`).

The lease and fence are the run's (lease.py): an evaluation is scored in one place only, every
write checks the fence, and a worker that is lost leaves the evaluation to the scheduler, which
queues it again (services/scheduler/lost.py); it then scores every row again. A worker asked to
stop gives it back at once (stopping.py), and a task that finds its previous process dead gives it
back too (takeover.py): scored again from the first row.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable

from services.trainer_worker import stopping
from services.trainer_worker.lease import Lease, LeaseLost, fenced_move
from services.trainer_worker.node_worker import take_devices, use_granted_devices
from services.trainer_worker.work_reporter import WorkReporter
from shared import reasons
from shared.artifacts import dataset_key, evaluation_rows_key, join
from shared.datasets import read_rows
from shared.errors import WorkFailed
from shared.judges import JudgeAddresses, JudgeNotReady, wait_until_ready
from shared.lifecycle.evaluations import EVALUATIONS
from shared.redis_retry import unreachable
from shared.rewards import check_rewards
from shared.snapshot_files import damage_of
from shared.states import EvaluationStatus

PROGRESS_EVERY_S = 0.5

# How long an evaluation waits for its judge endpoint to become READY, and how often it looks.
JUDGE_WAIT_S = 120.0
JUDGE_POLL_S = 0.5


class EvaluationReporter(WorkReporter):
    """Fenced writes to one evaluation document, its events, progress and cancel requests."""

    kind = "evaluation"

    def __init__(self, *, store, evaluation: dict[str, Any], lease: Lease, log):
        super().__init__(store=store, lease=lease, log=log, resource_id=evaluation["id"])
        self._last_progress = 0.0
        self.cancelled = False
        self.worker_stopping = False  # its worker was asked to stop: it is given back, not ended
        self.scoring = False  # between rows from here on: it stops before its next row by itself

    def move(self, target: EvaluationStatus | Callable[[dict[str, Any]], EvaluationStatus | None],
             **fields: Any) -> dict[str, Any] | None:
        return fenced_move(self.store, self.lease, EVALUATIONS, target, **fields)

    def progress(self, done: int, total: int, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._last_progress < PROGRESS_EVERY_S and done != total:
            return
        self._last_progress = time.monotonic()

        def write(doc):
            doc["progress"] = {"rows": done, "totalRows": total}
            return doc

        self.update(write)

    def should_stop(self) -> bool:
        """True once the user asked to cancel (read at most every CANCEL_CHECK_EVERY_S), or once its
        worker is stopping (stopping.py)."""
        self.check_lease()
        if stopping.current().requested.is_set():
            self.worker_stopping = True
            return True
        if not self.cancelled and (doc := self.read_requests()) is not None:
            self.cancelled = bool(doc.get("cancelRequested"))
        return self.cancelled


def evaluate(worker, doc: dict[str, Any], claim: dict[str, Any], lease: Lease, log) -> str:
    """Score a granted evaluation while holding its lease (leased_work.with_lease checked the claim)."""
    devices = list(claim["devices"])
    doc = worker.store.update(doc["id"], take_devices(lease, worker.node, devices))
    reporter = EvaluationReporter(store=worker.store, evaluation=doc, lease=lease, log=log)
    stopping.current().stops_itself(lambda: reporter.scoring)
    reporter.event(reasons.work_taken(worker.holder, "evaluation", devices, lease.fence))
    metrics, results, detail = None, None, None
    try:
        if reporter.should_stop():
            outcome, detail = EvaluationStatus.CANCELLED, reasons.CANCELLED_BY_USER
        else:
            outcome, metrics, results, detail = _score(worker, doc, devices, reporter)
    except LeaseLost as exc:
        log.warning("lease lost; leaving the evaluation to its new holder", error=str(exc))
        return "stopped: lease lost"
    except Exception as exc:  # the scoring failed: the evaluation says why, the worker lives on
        if unreachable(exc):
            raise  # not the scoring: its store (leased_work.with_lease leaves it to be re-queued)
        log.exception("evaluation failed")
        outcome, detail = EvaluationStatus.FAILED, reasons.evaluation_failed(WorkFailed.of(exc).sentence)
        reporter.event(detail, level="error")

    # Stopped for its worker's stop, or failed as it stopped: given back, not ended.
    if (reporter.worker_stopping or stopping.current().requested.is_set()) and outcome != EvaluationStatus.SUCCEEDED:
        with stopping.current().ending():
            given = stopping.hand_back(worker, claim, lease, log)
        log.info("evaluation given back: its worker is stopping", outcome=given)
        return f"{given}: worker stopping" if given else "stopped: no longer this claim's"
    scored = {"metrics": metrics, "results": results} if metrics is not None else {}
    with stopping.current().ending():  # a stop arriving now does not give back an evaluation that is ending
        try:
            fenced_move(worker.store, lease, EVALUATIONS, outcome, detail=detail, **scored)
        except LeaseLost:
            return "stopped: lease lost"
        worker.claims().release(claim["id"])
    if outcome == EvaluationStatus.CANCELLED:
        reporter.event(reasons.CANCELLED_BY_USER)
    log.info("evaluation ended", status=outcome.value)
    return outcome.value


def _judge(worker, doc: dict[str, Any], reporter: EvaluationReporter):
    """`(prompt, completion, row) -> answer` asking the evaluation's judge endpoint (its id, or a
    live endpoint's name in the workload the API found it in), or None without one.

    A judge still QUEUED or STARTING (created together with the evaluation, or restarting after a
    lost process) is waited for, up to JUDGE_WAIT_S; one that has ended or does not exist, or is
    not READY by then, fails the evaluation with its sentence. Its address is read once it is READY.
    """
    ref = doc.get("judge")
    if not ref:
        return None
    from shared import rewards

    judges = JudgeAddresses(worker.config.redis_url, worker.config.key_prefix,
                            workloads=dict(doc.get("judgeWorkloads") or {}), _store=worker.store)
    try:
        target = wait_until_ready(
            judges.find, ref, wait_s=JUDGE_WAIT_S, poll_s=JUDGE_POLL_S, should_stop=reporter.should_stop,
            on_wait=lambda phase: reporter.event(reasons.evaluation_waits_for_judge(ref, phase, JUDGE_WAIT_S)))
    except JudgeNotReady as exc:
        raise WorkFailed(reasons.evaluation_judge_not_ready(ref, exc.phase)) from None

    def ask(prompt: Any, completion: str, row: dict[str, Any]) -> str | None:
        try:
            return rewards.ask_judge(target.address, rewards.judge_messages(prompt, completion, row),
                                     model=target.model, api_key=target.api_key)
        except Exception:  # unreachable, or an error answer: recorded as a row without a judge score
            return None

    return ask


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """Every row of the dataset as written (shared/datasets.py reads it; `engines.evaluate` interprets it)."""
    return [row.fields for row in read_rows(path)]


def _score(worker, doc: dict[str, Any], devices: list[str], reporter: EvaluationReporter):
    """Returns (outcome, metrics, results, detail)."""
    from services.trainer_worker.engines.evaluate import completion_budget, score
    from shared.load_spec import load_model, load_spec_for
    from shared.serving.generation import Generator

    # Again here, where the deployment's reward functions surely import (the API may not have them):
    # a parameter one does not take fails the evaluation saying so, before the model is loaded.
    check_rewards(doc.get("rewards") or [], registered=getattr(worker.config, "reward_functions", None),
                  field_prefix="rewards", imported=True)
    try:
        judge = _judge(worker, doc, reporter)
    except WorkFailed as exc:  # the judge's own sentence is the detail, without "evaluation failed: "
        reporter.event(exc.sentence, level="error")
        return EvaluationStatus.FAILED, None, None, exc.sentence
    adapters = None
    if doc.get("snapshot"):
        snap = worker.store.require(doc["snapshot"], "snapshot")
        found = damage_of(worker.artifacts, snap, "weights", deep=True)
        if found is not None:  # named before the model is loaded, not as a loader's error after
            raise WorkFailed(reasons.snapshot_damaged(snap["id"], found.file, found.problem))
        weights = (snap.get("contents") or {}).get("weights") or {}
        adapters = {snap["id"]: str(worker.artifacts.get_dir(join(snap["path"], weights.get("path", "adapter"))))}
    # The same load spec an endpoint over this model and adapter gets (endpoint_manager/manager.py).
    spec = load_spec_for(entry=worker.catalog.raw(doc["model"]), artifacts=worker.artifacts, adapters=adapters,
                         served_model_name=doc["id"], device=use_granted_devices(worker, devices))
    model, tokenizer = load_model(spec)
    generator = Generator(model, tokenizer, spec)
    model_name = next(iter(spec.adapters), spec.served_model_name)
    rows = _read_rows(worker.artifacts.get_file(dataset_key(doc["datasetDigest"])))
    budget = completion_budget(generator, rows, doc.get("maxTokens"))
    max_tokens = budget.max_tokens

    # A cancel sent while it was STARTING ends it here, read in the same write as the move.
    if reporter.move(lambda ev: None if ev.get("cancelRequested") else EvaluationStatus.RUNNING,
                     progress={"rows": 0, "totalRows": len(rows)}, maxTokensUsed=max_tokens,
                     maxTokensFrom=budget.source, longestReferenceTokens=budget.longest_reference) is None:
        return EvaluationStatus.CANCELLED, None, None, reasons.CANCELLED_BY_USER
    reporter.scoring = True
    reporter.event(reasons.evaluation_scoring(rows=len(rows), dataset=doc["dataset"], model=doc["model"],
                                              snapshot=doc.get("snapshot"), dtype=spec.dtype, device=spec.device,
                                              max_tokens=reasons.evaluation_max_tokens_text(
                                                  max_tokens, budget.source, budget.longest_reference)))
    scores = score(generator, model_name, rows, max_tokens=max_tokens, rewards=doc.get("rewards"),
                   registered=getattr(worker.config, "reward_functions", None), judge=judge,
                   should_stop=reporter.should_stop, on_row=reporter.progress)
    if scores.stopped:
        return EvaluationStatus.CANCELLED, None, None, reasons.CANCELLED_BY_USER
    reporter.progress(len(scores.rows), len(rows), force=True)
    relative = evaluation_rows_key(doc["id"])
    worker.artifacts.put_file(relative, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in scores.rows).encode())
    if scores.judge_unparsable:
        reporter.event(reasons.evaluation_judge_unparsable(scores.judge_unparsable, doc["judge"]), level="warn")
    reporter.event(reasons.evaluation_succeeded(len(scores.rows), scores.metrics["loss"]))
    return EvaluationStatus.SUCCEEDED, scores.metrics, {"path": relative, "rows": len(scores.rows)}, None
