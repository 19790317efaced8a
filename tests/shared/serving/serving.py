"""Start and stop a real serving process for tests: the built-in server on a free port.

Other tests (the endpoint manager's, the API proxy's) reuse `ServingProcess` and `make_adapter`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import requests

from shared.models.load_spec import LoadSpec
from shared.process.ports import free_port
from shared.serving.backends import BuiltinBackend

REPO_ROOT = Path(__file__).resolve().parents[3]


class ServingProcess:
    """The built-in server as a subprocess, started the way the endpoint manager starts it
    (`BuiltinBackend.command`), with its stderr (JSON log lines) kept in a file."""

    def __init__(self, spec: LoadSpec, workdir: Path, *, endpoint_id: str | None = None, api_key: str | None = None,
                 cpu_threads: int | None = None):
        self.spec = spec
        self.cpu_threads = cpu_threads
        self.api_key = api_key
        self.workdir = Path(workdir)
        self.port = free_port()
        self.spec_path = spec.write(self.workdir / "load_spec.json")
        self.log_path = self.workdir / "server.log"
        self.endpoint_id = endpoint_id
        self.proc: subprocess.Popen | None = None
        self.started_at = 0.0
        self.ready_after_s: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ServingProcess:
        argv, extra_env = BuiltinBackend(cpu_threads=self.cpu_threads).command(self.spec, port=self.port, spec_path=self.spec_path,
                                                   endpoint_id=self.endpoint_id, api_key=self.api_key)
        self.started_at = time.monotonic()
        self.proc = subprocess.Popen(argv, cwd=REPO_ROOT, env={**os.environ, **extra_env},
                                     stdout=subprocess.DEVNULL, stderr=open(self.log_path, "wb"))
        return self

    def wait_ready(self, timeout_s: float = 60.0) -> ServingProcess:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            try:
                if requests.get(f"{self.base_url}/health", timeout=1).status_code == 200:
                    self.ready_after_s = time.monotonic() - self.started_at
                    return self
            except requests.ConnectionError:  # still loading: the port is not bound yet
                pass
            time.sleep(0.05)
        raise TimeoutError(f"server not healthy after {timeout_s}s:\n{self.log()}")

    def wait_for_log(self, event: str, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while f'"event": "{event}"' not in self.log():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise TimeoutError(f"no {event!r} in the server's log:\n{self.log()}")
            time.sleep(0.02)

    def terminate(self, timeout_s: float = 15.0) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


def make_adapter(model_dir: Path | str, out_dir: Path | str, *, seed: int = 0, rank: int = 8) -> Path:
    """A PEFT LoRA adapter for the model whose weights are random enough to change its greedy output."""
    import torch
    from peft import LoraConfig, get_peft_model

    from shared.models.loading import load_causal_lm

    model = get_peft_model(load_causal_lm(model_dir, "fp32"),
                           LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=["q_proj", "v_proj", "o_proj"]))
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_" in name:
                param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    model.save_pretrained(str(out_dir))
    return Path(out_dir)


if __name__ == "__main__":  # a manual check: python -m tests.shared.serving.serving SPEC.json
    proc = ServingProcess(LoadSpec.read(sys.argv[1]), Path(sys.argv[2] if len(sys.argv) > 2 else ".")).start()
    print(proc.wait_ready().base_url, f"ready after {proc.ready_after_s:.1f}s")
