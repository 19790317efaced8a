"""Rollout generation for reinforcement runs (SPEC 4): a serving process next to the trainer.

A GRPO run does not generate with the model it trains. It starts one serving process of the
endpoint backends (`shared.serving.backends.choose_backend`: the built-in transformers
server on CPU slots, vLLM on CUDA GPUs) over the same base model and data type, and asks it for
groups of completions. After each update the run hands it **only the adapter**: the trainable LoRA
weights saved as safetensors into a fresh directory, loaded with `/v1/load_lora_adapter` under a new
name (`policy-STEP`, so vLLM cannot serve a cached older copy under the same name), the previous
one unloaded. The base weights never move. Each hand-off is measured (bytes written and sent by
path, seconds from save to unload) so a run's metrics show what it costs.

The built-in server folds each adapter it is handed into its own copy of the base weights (load
spec adapterMode "folded", shared/serving/adapter_fold.py): loading `policy-STEP` replaces the
adapter folded before, so nothing is unloaded, and rollouts run at a plain model's speed while
still only the adapter's bytes travel. `adapter_mode="unmerged"` keeps PEFT's LoRA layers beside
the base weights instead (how vLLM serves adapters; bench/grpo_handoff.py measures both).

On CPU this is exercised by the tests; on CUDA the same calls go to vLLM's server, which this
project cannot run in its CI (docs/grpo.md says so).
"""

from __future__ import annotations

import secrets
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from services.trainer_worker.engines.child_logs import last_error
from services.trainer_worker.engines.peak_memory import process_peak_bytes
from shared import reasons
from shared.child_env import child_env, die_with_parent, with_python_path
from shared.errors import WorkFailed
from shared.load_spec import LoadSpec, model_generation_config
from shared.plans import TrainingPlan
from shared.ports import free_port

READY_TIMEOUT_S = 300.0
REQUEST_TIMEOUT_S = 600.0
POLICY_ADAPTER = "default"  # the PEFT adapter a run trains (TRL also keeps a frozen "ref" beside it)


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


@dataclass
class HandOff:
    """One adapter hand-off: what it cost."""

    step: int
    name: str
    bytes: int
    seconds: float


@dataclass
class RolloutServer:
    """A serving process of one base model that generates a run's rollouts with its latest adapter."""

    model: str  # catalog id, for the load spec
    model_dir: Path
    precision: str
    devices: list[str]
    work_dir: Path  # holds the load spec, the server's log and the handed-off adapters
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None
    current: str | None = None  # the adapter name rollouts are generated with
    current_dir: Path | None = None
    handed_step: int | None = None  # the optimizer step whose adapter the server holds
    # its secret: the server answers only requests that carry it (nobody else on the node can sample)
    api_key: str = field(default_factory=lambda: secrets.token_urlsafe(32), repr=False)
    plan: TrainingPlan | None = None  # the run's plan: sizes vLLM beside the trainer (rollout_sizes.py)
    # How the built-in server applies the adapter (shared.load_spec.ADAPTER_MODES); None: the fastest
    # that answers as the unmerged adapter does, "folded" (vLLM applies LoRA itself and is always unmerged).
    adapter_mode: str | None = None
    folds: bool = field(default=False, init=False)  # the server started folds each adapter in place of the last

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _spec(self, adapters: dict[str, str], *, adapter_mode: str) -> LoadSpec:
        return LoadSpec(
            model=self.model, model_dir=str(self.model_dir), dtype=self.precision,
            generation_config=model_generation_config(self.model_dir), batch_invariant=True,
            served_model_name="base", adapters=adapters,
            device="cuda" if self.devices[0].startswith("cuda") else "cpu", adapter_mode=adapter_mode,
        )

    def _adapter_mode(self, backend) -> str:
        from shared.serving.backends import BuiltinBackend

        if not isinstance(backend, BuiltinBackend):
            return "unmerged"
        return self.adapter_mode or "folded"

    def launch_early(self) -> bool:
        """Start the process now, before the trainer has its model, where its backend needs nothing
        of that model (the built-in server; vLLM is sized by the model's parameters and the
        adapter's rank), so its imports and loading overlap the trainer's; `start` then waits for
        it and hands it the first adapter. False where it must wait for `start`."""
        from shared.serving.backends import BuiltinBackend, choose_backend

        backend = choose_backend(self.devices, cpu_threads=_torch_threads())
        if not isinstance(backend, BuiltinBackend):
            return False
        self._launch(backend, adapters={})
        return True

    def start(self, peft_model, *, step: int) -> RolloutServer:
        """The process with the adapter of `step` loaded, answering: started now with it, or, if
        `launch_early` started it, handed it once it answers."""
        from services.trainer_worker.engines.rollout_sizes import base_parameters

        name, directory = self._initial_policy(peft_model, step)
        if self.proc is None:
            adapters = {name: str(directory)} if directory is not None else {}
            self._launch(self.backend(parameters=base_parameters(peft_model)), adapters=adapters)
            self._wait_ready()
        else:
            self._wait_ready()
            if directory is not None:
                self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(directory)})
        self.current, self.current_dir, self.handed_step = name, directory, step
        return self

    def _launch(self, backend, *, adapters: dict[str, str]) -> None:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        spec = self._spec(adapters, adapter_mode=self._adapter_mode(backend))
        self.folds = spec.adapter_mode == "folded"
        spec_path = spec.write(self.work_dir / "load_spec.json")
        argv, extra_env = backend.command(spec, port=self.port, spec_path=spec_path, api_key=self.api_key)
        env = child_env(extra_env)  # the allow-list: not the worker's Redis URL, nor any token
        env.setdefault("TRAINING_LOG_LEVEL", "WARNING")
        root = Path(__file__).resolve().parents[3]
        with_python_path(env, str(root))

        with open(self.work_dir / "server.log", "ab") as log:  # the child keeps its own copy
            # A worker that dies takes its rollout server with it (PR_SET_PDEATHSIG).
            self.proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=log,
                                         preexec_fn=die_with_parent)

    def backend(self, *, parameters: int):
        """The serving backend for this server's devices; vLLM (on CUDA) gets the share of the GPU
        the trainer leaves free and the longest sequence a rollout needs, computed from the plan."""
        from dataclasses import replace

        from services.trainer_worker.engines import rollout_sizes
        from shared.serving.backends import VllmBackend, choose_backend

        # On CPU slots the server computes with the trainer's threads (its grant's share of the
        # cores, set by node_worker.use_granted_devices or a rank): the two take turns, never both at once.
        backend = choose_backend(self.devices, cpu_threads=_torch_threads())
        if isinstance(backend, VllmBackend) and self.plan is not None:
            backend = replace(backend, **rollout_sizes.vllm_sizes(
                self.plan, model_dir=self.model_dir, parameters=parameters,
                device_gib=rollout_sizes.device_memory_gib()))
        return backend

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise WorkFailed(reasons.rollout_server_ended(reasons.how_it_ended(self.proc.returncode),
                                                              last_error(self.work_dir / "server.log")))
            try:
                if requests.get(f"{self.base_url}/health", timeout=1).status_code == 200:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.1)
        raise WorkFailed(reasons.rollout_server_not_ready(READY_TIMEOUT_S, last_error(self.work_dir / "server.log")))

    def _initial_policy(self, peft_model, step: int) -> tuple[str, Path | None]:
        """The model name rollouts start with, and the adapter directory the server loads at start
        (on vLLM this also sizes --max-lora-rank to the run's adapter)."""
        name, directory, _ = self._save(peft_model, step)
        return name, directory

    def _save(self, peft_model, step: int) -> tuple[str, Path, int]:
        """Only the trained adapter, as safetensors, into a directory of its own."""
        name = f"policy-{step}"
        directory = self.work_dir / "adapters" / name
        if directory.exists():
            shutil.rmtree(directory)
        # PEFT writes a model card (README.md) first, which no server reads: half the save's time
        # (17 of 34 ms on the benchmark's 19M model). Shadowed for this save; should PEFT rename
        # the method, the card is written and removed below, as before.
        peft_model.create_or_update_model_card = lambda *args, **kwargs: None
        try:
            peft_model.save_pretrained(str(directory), selected_adapters=[POLICY_ADAPTER], safe_serialization=True)
        finally:
            del peft_model.create_or_update_model_card
        (directory / "README.md").unlink(missing_ok=True)
        size = sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())
        return name, directory, size

    def hand_off(self, peft_model, *, step: int) -> HandOff:
        """Give the server the adapter of `step` under a new name and drop the one it had (a folding
        server drops it as it folds the new one in its place)."""
        started = time.perf_counter()
        name, directory, size = self._save(peft_model, step)
        if name == self.current:  # the same step again (a resumed run's first step): reload it fresh
            self._post("/v1/unload_lora_adapter", {"lora_name": name})
            self.current = None
        self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(directory)})
        previous, previous_dir = self.current, self.current_dir
        self.current, self.current_dir, self.handed_step = name, directory, step
        if previous is not None and not self.folds:
            self._post("/v1/unload_lora_adapter", {"lora_name": previous})
        if previous_dir is not None and previous_dir != directory:
            shutil.rmtree(previous_dir, ignore_errors=True)
        return HandOff(step=step, name=name, bytes=size, seconds=time.perf_counter() - started)

    def _post(self, path: str, body: dict[str, Any]) -> requests.Response:
        response = requests.post(f"{self.base_url}{path}", json=body, timeout=REQUEST_TIMEOUT_S,
                                 headers={"Authorization": f"Bearer {self.api_key}"})
        if response.status_code != 200:
            raise WorkFailed(reasons.rollout_server_refused(path, response.status_code, response.text[:500]))
        return response

    def sample(self, prompts: list[list[int]], *, n: int, max_tokens: int, temperature: float,
               seed: int | None, top_p: float = 1.0, top_k: int = -1,
               repetition_penalty: float = 1.0) -> list[list[list[int]]]:
        """`n` completions of each tokenized prompt from the current adapter, as token ids, prompt by
        prompt. The prompts go in one request (the completions API's list of prompts), which the
        server samples as one batch. Every sampling setting is sent (by default: none but the
        temperature), so the model's generation_config, which fills what a request leaves out,
        cannot add its own."""
        body = {"model": self.current, "prompt": prompts, "n": n, "max_tokens": max_tokens,
                "temperature": temperature, "top_p": top_p, "top_k": top_k,
                "repetition_penalty": repetition_penalty, "return_token_ids": True}
        if seed is not None:
            body["seed"] = seed
        choices = sorted(self._post("/v1/completions", body).json()["choices"], key=lambda c: c["index"])
        if len(choices) != n * len(prompts):
            raise WorkFailed(reasons.rollout_server_short(answered=len(choices), prompts=len(prompts), n=n))
        return [[list(c["token_ids"]) for c in choices[i * n:(i + 1) * n]] for i in range(len(prompts))]

    def sample_chat(self, messages: list[dict[str, Any]], *, n: int, max_tokens: int, temperature: float,
                    seed: int | None, top_p: float = 1.0, top_k: int = -1,
                    repetition_penalty: float = 1.0) -> tuple[list[int], list[list[int]]]:
        """`n` completions of a chat prompt whose messages hold image parts (an image-text model's:
        the server reads the images, which token ids alone cannot carry), as `sample` asks; returns
        the prompt's token ids as the server built them, and each completion's."""
        body = {"model": self.current, "messages": messages, "n": n, "max_tokens": max_tokens,
                "temperature": temperature, "top_p": top_p, "top_k": top_k,
                "repetition_penalty": repetition_penalty, "return_token_ids": True}
        if seed is not None:
            body["seed"] = seed
        choices = sorted(self._post("/v1/chat/completions", body).json()["choices"], key=lambda c: c["index"])
        return list(choices[0]["prompt_token_ids"]), [list(c["token_ids"]) for c in choices]

    def peak_bytes(self) -> int | None:
        """The serving process's peak resident set so far on a CPU slot (the built-in server); None
        on CUDA, where vLLM's memory is on the GPU (engines/peak_memory.py), or when not running."""
        if self.proc is None or self.proc.poll() is not None or not self.devices[0].startswith("cpu"):
            return None
        return process_peak_bytes(self.proc.pid)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

