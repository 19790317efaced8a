"""Training across several devices of one node (SPEC 3.2): one process per device, like torchrun.

`run_distributed(job, reporter)` starts N rank processes (`python -m
services.trainer_worker.engines.distributed JOB_FILE`) with the torch.distributed environment
(MASTER_ADDR/PORT on a free local port, RANK, LOCAL_RANK, WORLD_SIZE); each rank runs the same
engine function as on one device (`engine_function`: `sft.run_sft`, `grpo.run_grpo`), which the
HF Trainer turns into DDP: gloo on CPU slots, NCCL on CUDA. The global batch stays the plan's
(`Hyperparameters.micro_batch`, shared/plans/training_plan.py).

Only rank 0 talks to the outside, over one local connection to this process:

    rank 0 ──("call", started|metrics|event|samples|snapshot|memory, kwargs)──► parent ──► the real Reporter
    rank 0 ──("stop?",) at each step end──► parent ──► reporter.stop_request()
    rank 0 ◄──("stop", None|"cancel"|"pause")── parent
    rank 0 ──("result", TrainingResult fields)─────────────────► parent
    rank 0 ──("disk full", step) when its snapshot met a full disk──► parent raises SnapshotDiskFull
    rank 0 ──("nothing to train", start, end) when it starts at its last step──► parent raises NothingToTrain

so the Reporter interface is the same on one device or many, and a stop request lands on the same
step as on one device. Each rank measures its own peak memory when training ends; rank 0 gathers
them (engines/peak_memory.py) and reports them all. Rank 0 broadcasts each step's stop decision to the other ranks
(kit.agree_on_stop), so all stop at the same step. Other ranks report nothing; each rank writes
its output to work_dir/ranks/rank-R.log.

If a rank fails, the parent stops every other rank (SIGKILL, then waits for it) and raises
WorkFailed naming the rank; a rank whose parent dies is killed by the kernel (PR_SET_PDEATHSIG),
so no rank is ever left running. Ranks ignore SIGTERM: a SIGTERM to the worker's process group
stops the run through its task process (stopping.py), not by killing a rank.
"""

from __future__ import annotations

import os
import pickle
import secrets
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path

from services.trainer_worker.engines.base import (
    NothingToTrain,
    Reporter,
    SnapshotDiskFull,
    TrainingJob,
    TrainingResult,
    check_restore,
)
from services.trainer_worker.engines.child_logs import last_error
from shared import reasons
from shared.errors import WorkFailed
from shared.process.child_env import child_env, die_with_parent
from shared.process.ports import free_port

REPO_ROOT = Path(__file__).resolve().parents[3]
POLL_S = 0.1
CONNECT_TIMEOUT_S = 600.0  # rank 0 connects once its imports are done, before it loads the model
EXIT_TIMEOUT_S = 120.0  # after rank 0's result, how long the ranks may take to tear down
FAILURE_GRACE_S = 2.0  # after a first rank fails, how long the others get to exit on their own
# A rank whose error says only that a peer went away failed because another rank did.
PEER_LOST_MARKERS = ("Connection closed by peer", "Connection reset by peer", "Gloo", "NCCL", "ProcessGroup")


def run_distributed(job: TrainingJob, reporter: Reporter) -> TrainingResult:
    """Train `job` across len(job.devices) processes of this node; reports through `reporter`."""
    check_restore(job)  # refuse an unreadable or mismatched restore before starting any rank
    world = len(job.devices)
    ranks_dir = job.work_dir / "ranks"
    ranks_dir.mkdir(parents=True, exist_ok=True)
    job_file = ranks_dir / "job.pkl"
    job_file.write_bytes(pickle.dumps(job))
    authkey = secrets.token_bytes(16)
    with Listener(("127.0.0.1", 0), authkey=authkey) as listener:
        env = _rank_env(job, listener.address, authkey)
        procs: list[subprocess.Popen] = []
        try:
            for rank in range(world):
                log = open(ranks_dir / f"rank-{rank}.log", "wb")
                procs.append(subprocess.Popen(
                    [sys.executable, "-m", "services.trainer_worker.engines.distributed", str(job_file)],
                    env={**env, "RANK": str(rank), "LOCAL_RANK": str(rank)},
                    stdout=log, stderr=subprocess.STDOUT, cwd=str(REPO_ROOT), preexec_fn=_rank_preexec,
                ))
                log.close()
            conn = _accept(listener, procs, ranks_dir)
            return _relay(conn, procs, reporter, ranks_dir)
        finally:
            _stop_all(procs)


def _rank_env(job: TrainingJob, address: tuple[str, int], authkey: bytes) -> dict[str, str]:
    """A rank's environment: the allow-list of shared/process/child_env.py (no Redis URL, no token: a rank
    talks to the outside through rank 0's relay; a grpo judge's address is read through the job
    file, 0600) and the torch.distributed variables."""
    env = child_env()
    threads = str(_threads_per_rank(len(job.devices)))
    env.update({
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(free_port()),
        "WORLD_SIZE": str(len(job.devices)),
        "LOCAL_WORLD_SIZE": str(len(job.devices)),
        "TRAINER_RELAY": f"{address[0]}:{address[1]}",
        "TRAINER_RELAY_KEY": authkey.hex(),
        "TRAINER_RANK_THREADS": threads,
        "OMP_NUM_THREADS": threads,  # accelerate would otherwise set 1 in every rank
        "PYTHONPATH": os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p),
    })
    return env


def _threads_per_rank(world: int) -> int:
    """A rank is one device slot: it gets the threads this process was given per slot, and never
    more than its share of the node's cores (the worker sets the per-slot count on CPU nodes)."""
    import torch

    return max(1, min(torch.get_num_threads(), (os.cpu_count() or 1) // world))


def _rank_preexec() -> None:
    """In a rank before exec: it dies with the worker process (`die_with_parent`), and ignores
    SIGTERM, so that a stop signalled to the worker's whole process group (`training down`,
    systemd) stops the run through the task's process, at a step boundary with a snapshot
    (stopping.py), instead of killing a rank and failing the run. It stays in the group, so a
    SIGKILL of the group still reaches it and whatever it started."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    die_with_parent()


def _accept(listener: Listener, procs: list[subprocess.Popen], ranks_dir: Path) -> Connection:
    """Wait for rank 0 to connect, failing as soon as any rank dies first."""
    listener._listener._socket.settimeout(POLL_S)  # noqa: SLF001 - Listener has no public accept timeout
    deadline = time.monotonic() + CONNECT_TIMEOUT_S
    while True:
        _raise_if_a_rank_failed(procs, ranks_dir)
        try:
            return listener.accept()
        except (TimeoutError, socket.timeout):
            if time.monotonic() > deadline:
                raise WorkFailed(reasons.rank_failed(rank=0, world=len(procs), how="did not start in time")) from None


def _relay(conn: Connection, procs: list[subprocess.Popen], reporter: Reporter, ranks_dir: Path) -> TrainingResult:
    """Carry rank 0's reporter calls out and answer its stop questions until every rank has exited."""
    result: TrainingResult | None = None
    result_at = 0.0
    open_ = True
    disk_full_step: int | None = None  # rank 0's snapshot met a full disk: the run pauses, not fails
    nothing_to_train: NothingToTrain | None = None  # rank 0 started at its plan's last step: no step taken
    while True:
        if open_ and conn.poll(POLL_S):
            try:
                kind, *payload = conn.recv()
            except EOFError:  # rank 0 closed its end (it is exiting)
                open_ = False
                continue
            if kind == "call":
                name, kwargs = payload
                getattr(reporter, name)(**kwargs)
            elif kind == "stop?":
                conn.send(("stop", reporter.stop_request()))
            elif kind == "result":
                result, result_at = TrainingResult(**payload[0]), time.monotonic()
            elif kind == "disk full":
                disk_full_step = payload[0]
            elif kind == "nothing to train":
                nothing_to_train = NothingToTrain(start_step=payload[0], end_step=payload[1])
            continue  # drain what is queued before looking at the processes
        if not open_:
            time.sleep(POLL_S)
        try:
            _raise_if_a_rank_failed(procs, ranks_dir)
        except WorkFailed:
            if disk_full_step is not None:
                raise SnapshotDiskFull(disk_full_step) from None
            if nothing_to_train is not None:
                raise nothing_to_train from None
            raise
        if all(p.poll() == 0 for p in procs):
            if result is None:
                raise WorkFailed(reasons.rank_failed(rank=0, world=len(procs), how="exited without a result"))
            return result
        if result is not None and time.monotonic() - result_at > EXIT_TIMEOUT_S:
            running = next(r for r, p in enumerate(procs) if p.poll() is None)
            raise WorkFailed(reasons.rank_failed(
                rank=running, world=len(procs), how=f"did not exit within {EXIT_TIMEOUT_S:.0f} s of the end of training"
            ))


def _raise_if_a_rank_failed(procs: list[subprocess.Popen], ranks_dir: Path) -> None:
    if not any(p.poll() not in (None, 0) for p in procs):
        return
    # The first failure often brings the others down with "connection closed" errors: give them a
    # moment, then name the rank that failed for its own reason.
    deadline = time.monotonic() + FAILURE_GRACE_S
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        time.sleep(POLL_S)
    failed = [(r, p.returncode, last_error(ranks_dir / f"rank-{r}.log")) for r, p in enumerate(procs)
              if p.returncode not in (None, 0)]

    def blame(item):
        rank, code, error = item
        killed = code < 0
        peer_lost = any(marker in error for marker in PEER_LOST_MARKERS)
        return (not killed, peer_lost, rank)

    rank, code, error = min(failed, key=blame)
    how = (f"was killed by {signal.Signals(-code).name}" if code < 0
           else f"failed with exit code {code}" + (f": {error}" if error else ""))
    raise WorkFailed(reasons.rank_failed(rank=rank, world=len(procs), how=how))


def _stop_all(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
    for proc in procs:
        proc.wait()


# --- Inside a rank process


class _RelayReporter:
    """Rank 0's Reporter: every call goes to the parent, which calls the real one."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def started(self, *, total_steps: int) -> None:
        self.conn.send(("call", "started", {"total_steps": total_steps}))

    def metrics(self, point: dict) -> None:
        self.conn.send(("call", "metrics", {"point": point}))

    def event(self, message: str, level: str = "info") -> None:
        self.conn.send(("call", "event", {"message": message, "level": level}))

    def samples(self, sample: dict) -> None:
        self.conn.send(("call", "samples", {"sample": sample}))

    def snapshot(self, *, step: int, key: str, directory: Path, manifest: dict, final: bool) -> None:
        self.conn.send(("call", "snapshot", {"step": step, "key": key, "directory": directory, "manifest": manifest,
                                             "final": final}))

    def memory(self, **kwargs) -> None:
        self.conn.send(("call", "memory", kwargs))

    def stop_request(self) -> str | None:
        # Asked once per step and answered by the real reporter after every call sent before it,
        # so a stop lands on the same step as it would on one device.
        self.conn.send(("stop?",))
        kind, value = self.conn.recv()
        assert kind == "stop", kind
        return value


class _SilentReporter:
    """The other ranks' Reporter: rank 0 speaks for the run, and decides when it stops."""

    def started(self, *, total_steps: int) -> None:
        pass

    def metrics(self, point: dict) -> None:
        pass

    def event(self, message: str, level: str = "info") -> None:
        pass

    def samples(self, sample: dict) -> None:
        pass

    def snapshot(self, *, step: int, key: str, directory: Path, manifest: dict, final: bool) -> None:
        pass

    def memory(self, **kwargs) -> None:
        pass

    def stop_request(self) -> str | None:
        return None


def _rank_main(job_file: str) -> None:
    import torch
    import torch.distributed as dist

    torch.set_num_threads(int(os.environ.get("TRAINER_RANK_THREADS", "1")))
    rank = int(os.environ["RANK"])
    job: TrainingJob = pickle.loads(Path(job_file).read_bytes())
    conn = None
    if rank == 0:
        host, port = os.environ["TRAINER_RELAY"].rsplit(":", 1)
        conn = Client((host, int(port)), authkey=bytes.fromhex(os.environ["TRAINER_RELAY_KEY"]))
    reporter = _RelayReporter(conn) if conn is not None else _SilentReporter()
    try:
        from services.trainer_worker.engines import engine_function

        result = engine_function(job.engine)(job, reporter)
        if conn is not None:
            conn.send(("result", asdict(result)))
    except SnapshotDiskFull as exc:
        if conn is not None:
            conn.send(("disk full", exc.step))
        raise
    except NothingToTrain as exc:  # every rank finds it alike; rank 0 says so for the run
        if conn is not None:
            conn.send(("nothing to train", exc.start_step, exc.end_step))
        raise
    finally:
        # Without this a rank can die with SIGABRT at interpreter teardown (docs: NOTES, gloo).
        if dist.is_available() and dist.is_initialized():
            dist.destroy_process_group()
        if conn is not None:
            conn.close()


if __name__ == "__main__":
    _rank_main(sys.argv[1])
    # A rank that finished leaves without interpreter teardown: destructors there (gloo's, after
    # FSDP's device mesh groups) sometimes abort it with SIGABRT after its work was done and its
    # result sent (seen once in a CI run: rank 0 exited 0, rank 1 -6). A rank that failed raised
    # above and exits as Python does, its traceback in its log.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
