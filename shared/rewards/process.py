"""Scoring completions by a reward list's functions, each call under a time budget (SPEC 4).

`RewardScorer` is what GRPO's reward functions and an evaluation's scoring call. The built-in
functions (shared/rewards/functions.py: exact match, a regex matched by RE2 in time linear in the completion,
length) run in the caller's process. A deployment's registered functions are code the trainer
cannot bound: they run in a child process of their own (`python -m shared.rewards.process`), and the
caller waits for each completion's score for at most `budget_s` (`call_budget_s()`, 30 s unless
TRAINING_REWARD_CALL_BUDGET_S says otherwise). A call that overruns has its process killed and
raises `WorkFailed` (shared/errors.py) with a sentence (`reasons.reward_call_overran`): the step (or the
evaluation) fails saying which reward and why, instead of the worker hanging. A function that
raises, or a process that dies, fails the same way with its own sentence.

Why a process and not a thread or a signal: a function stuck in C code (Python's own `re` over a
catastrophic pattern, say) holds the interpreter lock, which would starve the worker's lease
renewal thread (services/trainer_worker/lease.py) until the lease lapsed and the work was
re-queued onto the node's other slots, to hang them too. A child holds only its own lock, and
the caller waits in `select`, which releases it.

The protocol: the caller writes pickled requests to the child's stdin; the child answers on its
original stdout (the child points fd 1 at its stderr, so a function's prints cannot corrupt it)
with one JSON line per completion: `{"score": x}` (x a number or null), or `{"error": "..."}`. The
caller never unpickles what the child sends. The child gets an allow-listed environment
(shared/process/child_env.py) and dies with its parent.
"""

from __future__ import annotations

import json
import os
import pickle
import select
import signal
import struct
import subprocess
import sys
import time
import weakref
from collections.abc import Mapping
from typing import Any

from shared import reasons
from shared.errors import ValidationFailed, WorkFailed
from shared.process.child_env import child_env, die_with_parent
from shared.rewards.functions import BUILTIN, function_of, parameters_of, reward_key

DEFAULT_CALL_BUDGET_S = 30.0
BUDGET_ENV = "TRAINING_REWARD_CALL_BUDGET_S"
# Importing a deployment's reward module may load a model or torch: its own, longer budget.
LOAD_BUDGET_S = 300.0
_HEADER = struct.Struct("!I")


def call_budget_s(env: Mapping[str, str] | None = None) -> float:
    """The time one registered reward function may take on one completion."""
    raw = (os.environ if env is None else env).get(BUDGET_ENV)
    try:
        value = float(raw) if raw else DEFAULT_CALL_BUDGET_S
    except ValueError:
        value = DEFAULT_CALL_BUDGET_S
    return value if value > 0 else DEFAULT_CALL_BUDGET_S


class RewardScorer:
    """The function rewards of one list (a plan's `grpo.rewards`, an evaluation's `rewards`)."""

    def __init__(self, rewards: list[Mapping[str, Any]], registered: Mapping[str, str] | None = None, *,
                 budget_s: float | None = None):
        self.rewards = list(rewards)
        self.registered = dict(registered or {})
        self.budget_s = call_budget_s() if budget_s is None else budget_s
        self._builtin: dict[int, Any] = {}
        self._process: RewardProcess | None = None

    def score(self, index: int, completions: list[str], rows: list[Mapping[str, Any]], *,
              where: str) -> list[float | None]:
        """The scores of `completions` (each with its row) by the reward at `index`; `where` names
        the step or row for a failure's sentence."""
        entry = self.rewards[index]
        name = entry["function"]
        if name in BUILTIN:
            if index not in self._builtin:
                self._builtin[index] = function_of(entry)
            return [self._builtin[index](completion, row) for completion, row in zip(completions, rows)]
        if name not in self.registered:
            raise ValidationFailed(reasons.reward_function_missing(name), details={"function": name})
        if self._process is None or not self._process.alive():
            self._process = RewardProcess()
        return self._process.score(self.registered[name], parameters_of(entry), completions, rows,
                                   key=reward_key(self.rewards, index), where=where, budget_s=self.budget_s)

    def score_one(self, completion: str, row: Mapping[str, Any], *, where: str) -> dict[str, float | None]:
        """Each function reward's score of one completion, by `reward_key` (judges left out)."""
        return {reward_key(self.rewards, i): self.score(i, [completion], [row], where=where)[0]
                for i, entry in enumerate(self.rewards) if entry.get("function")}

    def close(self) -> None:
        if self._process is not None:
            self._process.close()
            self._process = None

    def __enter__(self) -> RewardScorer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class RewardProcess:
    """One child process that runs registered reward functions (imported once each)."""

    def __init__(self) -> None:
        env = child_env({"PYTHONPATH": os.pathsep.join(p for p in sys.path if p), "PYTHONUNBUFFERED": "1"})
        self.proc = subprocess.Popen([sys.executable, "-m", "shared.rewards.process"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, preexec_fn=die_with_parent)
        self._buffer = b""
        self._loaded: set[str] = set()
        self._finalizer = weakref.finalize(self, _kill, self.proc)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def score(self, reference: str, parameters: Mapping[str, Any], completions: list[str],
              rows: list[Mapping[str, Any]], *, key: str, where: str, budget_s: float) -> list[float | None]:
        if reference not in self._loaded:  # imported first, under its own budget
            self._send(("load", reference), key=key, where=where)
            answer = self._answer(key=key, reference=reference, where=where, budget_s=LOAD_BUDGET_S)
            if "error" in answer:
                self.close()
                raise WorkFailed(reasons.reward_call_raised(where, key, str(answer["error"])))
            self._loaded.add(reference)
        self._send(("score", reference, dict(parameters), list(completions), [dict(r) for r in rows]),
                   key=key, where=where)
        scores: list[float | None] = []
        for _ in completions:
            answer = self._answer(key=key, reference=reference, where=where, budget_s=budget_s)
            if "error" in answer:  # the rest of the batch's answers are dropped with the process
                self.close()
                raise WorkFailed(reasons.reward_call_raised(where, key, str(answer["error"])))
            scores.append(None if answer.get("score") is None else float(answer["score"]))
        return scores

    def close(self) -> None:
        self._finalizer()

    def _send(self, request: tuple, *, key: str, where: str) -> None:
        data = pickle.dumps(request)
        try:
            self.proc.stdin.write(_HEADER.pack(len(data)) + data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise WorkFailed(reasons.reward_process_ended(where, key, self._how_it_ended())) from None

    def _answer(self, *, key: str, reference: str, where: str, budget_s: float) -> dict[str, Any]:
        deadline = time.monotonic() + budget_s
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            ready = select.select([fd], [], [], max(0.0, remaining))[0] if remaining > 0 else []
            if not ready:  # the budget is spent: the process is stopped, whatever it is doing
                self.close()
                raise WorkFailed(reasons.reward_call_overran(where, key, reference, budget_s))
            chunk = os.read(fd, 65536)
            if not chunk:
                raise WorkFailed(reasons.reward_process_ended(where, key, self._how_it_ended()))
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            self.close()
            raise WorkFailed(reasons.reward_call_raised(where, key, reasons.REWARD_PROCESS_OUT_OF_PROTOCOL))
        return answer

    def _how_it_ended(self) -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.close()
            code = self.proc.wait()
        return reasons.how_it_ended(code)


def _kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait()
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except (OSError, ValueError):
            pass


# --- The child


def _serve() -> None:
    """Answer requests on stdin until it closes (the parent is done, or gone)."""
    from shared.rewards.functions import load_registered

    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what a function prints goes to stderr, never into the answers
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    functions: dict[str, Any] = {}
    while True:
        header = requests.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        request = pickle.loads(requests.read(_HEADER.unpack(header)[0]))
        if request[0] == "load":
            try:
                functions[request[1]] = load_registered(request[1])
                answer = {"loaded": True}
            except Exception as exc:  # its module's own failure on import, told to the caller as a sentence
                answer = {"error": reasons.error_text(exc)}
            _write(answers, answer)
            continue
        _, reference, parameters, completions, rows = request
        for completion, row in zip(completions, rows):
            try:
                value = functions[reference](completion, row, **parameters)
                answer = {"score": None if value is None else float(value)}
            except Exception as exc:  # the function's own failure, told to the caller as a sentence
                answer = {"error": reasons.error_text(exc)}
            _write(answers, answer)


def _write(answers, answer: dict[str, Any]) -> None:
    answers.write(json.dumps(answer).encode() + b"\n")
    answers.flush()


if __name__ == "__main__":
    _serve()
