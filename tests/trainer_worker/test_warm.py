"""The worker imports the training stack before Celery forks its children (warm.py): a child
forked after `preload` has every module a training task needs, and CUDA is still untouched, so
the child can still choose its GPUs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, os, sys
from services.trainer_worker.warm import MODULES, preload
seconds = preload()
pid = os.fork()
if pid == 0:  # what a Celery child sees
    import torch
    facts = {"missing": [m for m in MODULES if m not in sys.modules], "trl": "trl.trainer.sft_trainer" in sys.modules,
             "cudaInitialised": torch.cuda.is_initialized(), "seconds": seconds}
    print(json.dumps(facts), flush=True)
    os._exit(0)
os.waitpid(pid, 0)
"""


def test_a_child_forked_after_preload_has_the_training_stack_and_no_cuda():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    facts = json.loads(done.stdout.strip().splitlines()[-1])
    assert facts["missing"] == [] and facts["trl"]
    assert facts["cudaInitialised"] is False
    assert facts["seconds"] > 0


def test_the_worker_preloads_after_taking_the_node_and_before_the_pool_starts():
    source = (REPO / "services" / "trainer_worker" / "worker.py").read_text()
    assert source.index("start_node(config, node.name)") < source.index("preload()") < source.index("_run_worker(app")
