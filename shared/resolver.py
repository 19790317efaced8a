"""The plan decides (SPEC 3.1): pick the engine that trains a plan on a dataset of some format,
or refuse it with the sentence users see. What engines there are, and what each trains (its
method, GPU counts, precisions, restores, dataset formats), is read from their declarations in
shared/engines.py at each call. `startable_runs` lists every combination a model can start by asking
`resolve` itself, pool by pool, for a plan at the schema's defaults, so `base-models get MODEL`
and the resolver never disagree.

Of the engines that train a plan, it picks the first (whole copies, DDP, before shards, FSDP2)
whose memory estimate fits the GPUs of a node that could take it, and refuses a plan that no
engine fits (`training_memory_gib`, below, says how that is estimated).
"""

from __future__ import annotations

from itertools import product
from typing import Any

from shared import engines, reasons
from shared.config import Pool
from shared.datasets import FORMATS
from shared.engines import ALL_RESTORES, RESTORE_NONE, EngineSpec
from shared.errors import Unprocessable, ValidationFailed
from shared.gpu_share import rollout_server_gib
from shared.plans import Adapter, AdapterSchema, HyperparametersSchema, TrainingPlan


def _device_kinds(pool: Pool, gpus: int) -> set[str]:
    return {n.device_kind for n in pool.nodes if n.device_count >= gpus}


def _refuse_the_dataset_format(plan: TrainingPlan, dataset_format: str) -> None:
    """Refuse (400, naming the dataset) rows that no engine of the plan's method declares it trains on.
    A method no engine trains is left to the engine refusal, which names what was asked for."""
    of_method = [spec for spec in engines.ENGINES if spec.method == plan.method]
    declared = {fmt for spec in of_method for fmt in spec.dataset_formats}
    if not of_method or dataset_format in declared:
        return
    raise ValidationFailed(
        reasons.dataset_format_refused(dataset=plan.dataset, dataset_format=dataset_format, method=plan.method,
                                       trains_on=[fmt for fmt in FORMATS if fmt in declared]
                                       + sorted(declared - set(FORMATS))),
        details={"field": "dataset"},
    )


def refuse_the_dataset_modality(dataset: str, model: dict[str, Any], dataset_modality: str, *,
                                field: str = "dataset", evaluated: bool = False) -> None:
    """Refuse (422, naming `field`) rows with images for a text model, and rows without for an
    image-text model: to train on, or (`evaluated`) to evaluate on."""
    if dataset_modality == model["modality"]:
        return
    raise Unprocessable(
        reasons.dataset_modality_refused(dataset=dataset, model=model["id"], dataset_modality=dataset_modality,
                                         evaluated=evaluated),
        details={"field": field, "datasetModality": dataset_modality, "modelModality": model["modality"]},
    )


def resolve(plan: TrainingPlan, *, model: dict[str, Any], pool: Pool,
            dataset_format: str | None = None, dataset_modality: str | None = None) -> EngineSpec:
    """Return the engine that trains `plan` on `model` in `pool` over rows of `dataset_format`
    (shared/datasets.py FORMATS; None: whatever the dataset, as `startable_runs` asks) and
    `dataset_modality` (text or image-text; None: whatever), or raise ValidationFailed (400) for
    rows no engine of the method trains on, else Unprocessable (422)."""
    if dataset_format is not None:
        _refuse_the_dataset_format(plan, dataset_format)
    if dataset_modality is not None:
        refuse_the_dataset_modality(plan.dataset, model, dataset_modality)
    gpus = plan.execution.gpus
    precision = plan.precision
    if gpus > pool.largest_node_gpus:
        raise Unprocessable(
            reasons.gpus_exceed_every_node(gpus=gpus, pool=pool.name, largest_node_gpus=pool.largest_node_gpus),
            details={"field": "execution.gpus"},
        )
    if precision not in model["precisions"]:
        raise Unprocessable(
            reasons.precision_unsupported(precision=precision, model=model["id"], supported=model["precisions"]),
            details={"field": "precision"},
        )
    kinds = _device_kinds(pool, gpus)
    capable = [  # every engine that declares it trains this plan, whatever its memory
        spec for spec in engines.ENGINES
        if gpus in model["gpuCounts"] and model["modality"] in spec.modalities
        and (dataset_format is None or dataset_format in spec.dataset_formats)
        and any(spec.trains(method=plan.method, gpus=gpus, precision=precision, kl=plan.kl,
                            restore=plan.restore_kind, device_kind=kind) for kind in kinds)
    ]
    if not capable:
        raise _engine_refusal(plan)
    return _the_one_that_fits(plan, capable, model=model, pool=pool)


def _engine_refusal(plan: TrainingPlan) -> Unprocessable:
    gpus = plan.execution.gpus
    return Unprocessable(
        reasons.engine_refused(method=plan.method, kl_penalty=1.0 if plan.kl else 0.0,
                               restores_weights=plan.restore_kind == "weights", gpus=gpus),
        details={"method": plan.method, "gpus": gpus, "restore": plan.restore_kind},
    )


# What the list of startable runs assumes of the parts of a plan the memory estimate reads: the
# plan schema's own defaults, so a listed run is one that a plan leaving them out starts. A plan
# with a larger batch, longer rows or a higher rank needs more memory and may be refused.
ASSUMED_ADAPTER_FIELDS = ("rank", "targetModules")
ASSUMED_HYPERPARAMETER_FIELDS = ("batchSize", "gradientAccumulation", "maxSeqLength")
ANY_KL_PENALTY = 0.1  # any klPenalty > 0 resolves alike
ANY_DATASET = ""  # a startable row holds whatever the dataset (asked with dataset_format None)


def startable_assumptions() -> dict[str, dict[str, Any]]:
    """The adapter and hyperparameters `startable_runs` asks the resolver about (`startableRunsAssume`)."""
    adapter, hyper = AdapterSchema().load({}), HyperparametersSchema().load({})
    return {"adapter": {k: adapter[k] for k in ASSUMED_ADAPTER_FIELDS},
            "hyperparameters": {k: hyper[k] for k in ASSUMED_HYPERPARAMETER_FIELDS}}


def startable_plan(*, model: str, method: str, gpus: int, precision: str, kl: bool, restore: str,
                   assumes: dict[str, dict[str, Any]] | None = None) -> TrainingPlan:
    """The plan a row of `startable_runs` stands for: the row's choices, everything else the defaults.
    It names no dataset and no snapshot: a row holds for any."""
    assumes = assumes or startable_assumptions()
    body: dict[str, Any] = {"method": method, "model": model, "dataset": ANY_DATASET, "precision": precision,
                            "execution": {"gpus": gpus}, "adapter": dict(assumes["adapter"]),
                            "hyperparameters": dict(assumes["hyperparameters"])}
    if method == "grpo":
        body["grpo"] = {"klPenalty": ANY_KL_PENALTY if kl else 0.0}
    if restore != RESTORE_NONE:
        body["restore"] = {"snapshot": None, "what": restore}
    return TrainingPlan.from_dict(body)


def _accepts(plan: TrainingPlan, *, model: dict[str, Any], pool: Pool) -> EngineSpec | None:
    try:
        # A model's startable runs are listed before any dataset is chosen: any format.
        return resolve(plan, model=model, pool=pool, dataset_format=None)
    except Unprocessable:
        return None


def startable_runs(model: dict[str, Any], pools: list[Pool]) -> list[dict[str, Any]]:
    """Every (method, GPU count, precision, KL penalty, restore) that `resolve` accepts for `model` in
    at least one of `pools`, for the plan `startable_plan` builds (adapter and hyperparameters at
    their defaults, `startable_assumptions`). Each row names the engine that would train it, the
    pools that would take it and the memory it is estimated to need per GPU where one of those pools
    has GPUs, else per CPU slot (which trains without checkpointing; null: size unknown).

    It asks `resolve` itself, pool by pool, memory fit included, so the list and the resolver
    cannot disagree. The candidates are all the resolver could accept: a GPU count or precision the
    model does not declare, or a method no engine trains, is always refused."""
    assumes = startable_assumptions()
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
    devices: dict[tuple[Any, ...], str] = {}  # the device kind each row's memoryGiB is for
    candidates = product(dict.fromkeys(spec.method for spec in engines.ENGINES), sorted(set(model["gpuCounts"])),
                         sorted(set(model["precisions"])), (False, True), ALL_RESTORES)
    for method, gpus, precision, kl, restore in candidates:
        plan = startable_plan(model=model["id"], method=method, gpus=gpus, precision=precision, kl=kl,
                              restore=restore, assumes=assumes)
        if kl and not plan.kl:
            continue  # only grpo plans carry a KL penalty
        for pool in pools:
            spec = _accepts(plan, model=model, pool=pool)
            if spec is None:
                continue
            key = (method, gpus, precision, kl, restore, spec.name)
            if key not in rows:
                rows[key] = {"method": method, "gpus": gpus, "precision": precision, "klPenalty": kl,
                             "restore": restore, "engine": spec.name, "pools": [], "memoryGiB": None}
            rows[key]["pools"].append(pool.name)
            # per GPU where a pool of GPUs takes it, else per CPU slot (which trains without checkpointing)
            device = CUDA if CUDA in (admitted_device(plan, pool), devices.get(key)) else CPU
            if devices.get(key) != device:
                devices[key] = device
                needs = training_memory_gib(plan, model=model, sharded=spec.shards_weights, device=device)
                rows[key]["memoryGiB"] = None if needs is None else round(needs, 1)
    return list(rows.values())


# --- Will it fit? A plan's memory per GPU (or CPU slot), estimated before anything is loaded.
#
# The same function estimates a plan for the API (admission, from the catalog entry's shape), for
# the worker (the run's own estimate, from the loaded model's config, shown beside its measured
# peak: `memory` of the run document) and for the CUDA sft engine's choice to keep its activations
# (engines/kit.py `keeps_activations`), so the three always agree. Per device (every DDP rank holds
# a whole copy of the model and adapter; a sharded engine's ranks hold 1/gpus of the weights,
# adapter, gradients and optimizer state, plus the two layers FSDP2 gathers whole at a time,
# `gathered_unit_bytes`):
#   base weights     parameters x bytes of the precision (fp32 4, bf16/fp16 2); frozen, no grads
#   LoRA adapter     trainable parameters x 16 bytes: the fp32 weight, its fp32 gradient and
#                    Adam's two fp32 moments (PEFT keeps adapters in fp32 under bf16/fp16 autocast)
#   activations      per token of a micro-batch at full length (maxSeqLength; grpo: the prompt and
#                    its completion), `layer_activation_bytes` per layer that autograd keeps for
#                    the backward: 22 hidden-sized and 4 FFN-sized tensors of activation bytes
#                    (the inputs of each LoRA-wrapped projection, the RMS norms' copies, q, k and
#                    v with grouped heads repeated, the attention output, the gated MLP's gate,
#                    up, activation and product), and with LoRA dropout the dropped copy and mask
#                    of each wrapped projection's input. 22 is fitted, not derived: SmolLM2-135M
#                    (hidden 576, FFN 1536, 30 layers) on a CPU slot took 3.19 MiB a token, 2.0
#                    MiB of it for 28 layers more than the same model cut to two
#                    (docs/sharding.md): 75 KB a layer, 21.8 hidden-sized and the 4 FFN-sized
#                    tensors in fp32; 22 counted. Nothing seq x seq is counted: torch's fused
#                    attention keeps none, and 512-token rows fit as 128-token ones do.
#                    How the engine trains on that device decides how many layers keep them:
#                    without activation checkpointing (every CPU run; an sft run on CUDA whose
#                    estimate without it fits, engines/kit.py) every layer; with it (grpo and
#                    sft-fsdp on CUDA, and an sft run on CUDA that does not fit without it) each
#                    layer's input (one hidden-sized tensor) plus one layer recomputed at a time.
#   logits           the positions whose logits are computed (sft: every token; grpo: the
#                    completion's) x vocab x 4 bytes (fp32) x LOGITS_COPIES: the logits, their
#                    log-softmax, their gradient, and the temporaries of the loss and of the
#                    entropy and accuracy the trainers log: 5.6 measured on SmolLM2 cut to two
#                    layers (1.19 MiB a token, two layers' activations 0.15 of it), 6 counted
#   runtime          on CUDA 0.5 GiB for the CUDA context, allocator slack and communication
#                    buffers; on a CPU slot the process itself, measured as peak resident memory:
#                    Python with torch, transformers, peft, trl and datasets imported, the Trainer,
#                    the tokenized dataset and the allocator's arenas (CPU_PROCESS_GIB)
#   rollout server   grpo only: the serving process beside the trainer on each device
#                    (shared/gpu_share.py `rollout_server_gib`)
#   margin           the sum x (1 + MARGIN): what the calibration (docs/sharding.md, bench/
#                    memory_calibrate.py) showed of allocator slack and of what varies run to run
# Shapes come from the model's description (hiddenSize, layers, vocabSize, intermediateSize: a real
# model's config.json through shared/model_facts.py, a built-in's spec), else, for a model whose
# files the API cannot read, from the parameter count of a typical decoder (Llama/Qwen-like):
# parameters ~ 12 x layers x hidden^2 with layers ~ hidden / 128, so hidden ~ (parameters x 128 /
# 12)^(1/3); vocab ~ 32 x hidden; intermediate 3 x hidden.
# LoRA parameters: rank x layers x the (in + out) widths of each target module, in units of hidden
# for a Qwen-like layer (FFN 3 x hidden, grouped KV a quarter of hidden):
#   q_proj 2, k_proj 1.25, v_proj 1.25, o_proj 2, gate_proj 4, up_proj 4, down_proj 4  (all-linear:
#   18.5), any other module 2. For a 77M Qwen3-style model (hidden 640, 12 layers) at rank 16 this
#   gives 2.27M parameters; PEFT counts 2.26M.
# A node without memoryGiB is never refused. Every run measures its own peak per rank and shows it
# beside this estimate; a peak above it is a warn event (services/trainer_worker/reporter.py).

GIB = 1024**3
BYTES_PER_PARAMETER = {"fp32": 4, "bf16": 2, "fp16": 2}
LORA_TRAINABLE_BYTES = 4 + 4 + 8  # fp32 weight + fp32 gradient + Adam's two fp32 moments
LORA_WIDTHS = {"q_proj": 2.0, "k_proj": 1.25, "v_proj": 1.25, "o_proj": 2.0,
               "gate_proj": 4.0, "up_proj": 4.0, "down_proj": 4.0}
OTHER_MODULE_WIDTH = 2.0
FFN_OF_HIDDEN = 3.0  # intermediate size over hidden when the entry does not say (Qwen3: 3, Llama: 2.7)
LAYER_HIDDEN_TENSORS = 22  # hidden-sized tensors a layer keeps per token for its backward (measured)
LAYER_FFN_TENSORS = 4  # FFN-sized ones: gate, up, the activation and the product
LOGITS_COPIES = 6  # fp32 vocab-sized tensors per position at the loss's peak (measured)
RUNTIME_GIB = 0.5  # CUDA: context, allocator slack, communication buffers
CPU_PROCESS_GIB = 1.0  # a CPU slot: the training process itself (measured: docs/sharding.md)
MARGIN = 0.15  # the stated margin over the sum of the terms
GATHERED_LAYERS = 2  # FSDP2: the layer being computed and the one prefetched
CPU, CUDA = "cpu", "cuda"  # the device kinds a node declares (shared/config.py)


def model_shape(model: dict[str, Any]) -> tuple[int, int, int]:
    """(hidden, layers, vocab) from the catalog entry, or estimated from its parameter count."""
    params = float(model["parameters"])
    hidden = int(model.get("hiddenSize") or max(1, round((params * 128 / 12) ** (1 / 3))))
    layers = int(model.get("layers") or max(1, round(hidden / 128)))
    vocab = int(model.get("vocabSize") or 32 * hidden)
    return hidden, layers, vocab


def intermediate_size(model: dict[str, Any], hidden: int) -> int:
    """The FFN width from the entry (intermediateSize), else FFN_OF_HIDDEN x hidden."""
    return int(model.get("intermediateSize") or round(FFN_OF_HIDDEN * hidden))


def lora_targets(adapter: Adapter) -> list[str]:
    if adapter.every_linear_layer:
        return list(LORA_WIDTHS)
    targets = adapter.target_modules
    return [targets] if isinstance(targets, str) else list(targets)


def lora_parameters(adapter: Adapter, *, hidden: int, layers: int) -> int:
    width = sum(LORA_WIDTHS.get(name, OTHER_MODULE_WIDTH) for name in lora_targets(adapter))
    return int(adapter.rank * layers * width * hidden)


def layer_activation_bytes(plan: TrainingPlan, *, hidden: int, intermediate: int) -> float:
    """What one decoder layer keeps per token for its backward, without checkpointing."""
    act = BYTES_PER_PARAMETER[plan.precision]
    kept = act * (LAYER_HIDDEN_TENSORS * hidden + LAYER_FFN_TENSORS * intermediate)
    if plan.adapter.dropout > 0:  # each wrapped projection's input dropped afresh: the copy and its mask
        inputs = sum(intermediate if name == "down_proj" else hidden for name in lora_targets(plan.adapter))
        kept += (act + 1) * inputs
    return kept


def trained_positions(plan: TrainingPlan) -> tuple[int, int]:
    """(tokens a row trains over at full length, those of them whose logits are computed)."""
    seq = plan.hyperparameters.max_seq_length
    if plan.is_grpo:
        completion = plan.grpo_settings.max_completion_length
        return seq + completion, completion + 1
    return seq, seq


def training_memory_gib(plan: TrainingPlan, *, model: dict[str, Any], sharded: bool = False,
                        device: str = CUDA, activation_checkpointing: bool | None = None) -> float | None:
    """About how many GiB each device needs to train `plan` (None when the model's size is unknown):
    every device with a whole copy of the model (DDP, one device), or `sharded` across the plan's
    GPUs (FSDP2). A grpo plan's devices also hold the rollout server (shared/gpu_share.py)."""
    trainer = trainer_memory_gib(plan, model=model, sharded=sharded, device=device,
                                 activation_checkpointing=activation_checkpointing)
    if trainer is None or not plan.is_grpo:
        return trainer
    hidden, layers, vocab = model_shape(model)
    server = rollout_server_gib(plan, parameters=float(model["parameters"]), hidden=hidden, layers=layers,
                                vocab=vocab, device=device)
    return trainer + server * (1 + MARGIN)


def checkpoints_activations(device: str) -> bool:
    """How an engine trains `plan` on `device` when nothing else decides: never checkpointing on a
    CPU slot; on CUDA with it (grpo, sft-fsdp, and the admission of an sft plan, whose engine then
    keeps its activations where the estimate without them fits: engines/kit.py)."""
    return device != CPU


def trainer_memory_gib(plan: TrainingPlan, *, model: dict[str, Any], sharded: bool = False, device: str = CUDA,
                       activation_checkpointing: bool | None = None) -> float | None:
    """What the training process alone needs on each device (the rollout server beside it not
    counted), margin included: on `device` (cpu or cuda), with activation checkpointing or without
    (None: as `checkpoints_activations` says the engine trains there)."""
    if not model.get("parameters"):
        return None
    if activation_checkpointing is None:
        activation_checkpointing = checkpoints_activations(device)
    precision = plan.precision
    hidden, layers, vocab = model_shape(model)
    intermediate = intermediate_size(model, hidden)
    gpus = plan.execution.gpus
    micro_batch = plan.hyperparameters.micro_batch(gpus)
    tokens, logit_positions = trained_positions(plan)
    weights = float(model["parameters"]) * BYTES_PER_PARAMETER[precision]
    adapter = lora_parameters(plan.adapter, hidden=hidden, layers=layers) * LORA_TRAINABLE_BYTES
    if sharded:
        weights, adapter = weights / gpus + gathered_unit_bytes(model, precision), adapter / gpus
    per_layer = layer_activation_bytes(plan, hidden=hidden, intermediate=intermediate)
    if activation_checkpointing:  # each layer's input kept, one layer recomputed at a time
        per_token = layers * hidden * BYTES_PER_PARAMETER[precision] + per_layer
    else:
        per_token = layers * per_layer
    activations = micro_batch * tokens * per_token
    logits = micro_batch * logit_positions * vocab * 4 * LOGITS_COPIES
    runtime = CPU_PROCESS_GIB if device == CPU else RUNTIME_GIB
    return ((weights + adapter + activations + logits) / GIB + runtime) * (1 + MARGIN)


def gathered_unit_bytes(model: dict[str, Any], precision: str) -> float:
    """What FSDP2 holds whole besides each GPU's shards: the unit it all-gathers for the layer it
    computes and the one it prefetches (two decoder layers), or the embedding unit when that is
    larger (with tied embeddings the head shares it)."""
    hidden, layers, vocab = model_shape(model)
    embedding = float(vocab * hidden)
    per_layer = max(0.0, float(model["parameters"]) - embedding) / layers
    return max(GATHERED_LAYERS * per_layer, embedding) * BYTES_PER_PARAMETER[precision]


def admitted_device(plan: TrainingPlan, pool: Pool) -> str:
    """The device kind a plan is estimated for in `pool`: cpu when every node that could take it
    has CPU slots (trained without checkpointing, the process itself counted), else cuda."""
    return CPU if _device_kinds(pool, plan.execution.gpus) == {CPU} else CUDA


def _largest_memory(plan: TrainingPlan, pool: Pool) -> tuple[float | None, list[float]]:
    """The most memory per GPU of a node that could take the plan (None: some such node has unknown
    memory, so anything might fit), and the memories of those nodes."""
    gpus = plan.execution.gpus
    memories = [n.memory_gib for n in pool.nodes if n.device_count >= gpus]
    if not memories or any(m is None for m in memories):
        return None, []
    return max(float(m) for m in memories), [float(m) for m in memories]


def _the_one_that_fits(plan: TrainingPlan, capable: list[EngineSpec], *, model: dict[str, Any],
                       pool: Pool) -> EngineSpec:
    """Whole copies (one GPU, DDP) when the memory estimate fits a node that could take the plan (or
    its memory is unknown); shards (FSDP2) only when whole copies do not fit and shards do; else
    refused with what the leanest engine that trains the plan would need."""
    whole = [spec for spec in capable if not spec.shards_weights]
    sharded = [spec for spec in capable if spec.shards_weights]
    largest, memories = _largest_memory(plan, pool)
    device = admitted_device(plan, pool)
    needs_whole = training_memory_gib(plan, model=model, device=device)
    if largest is None or needs_whole is None or needs_whole <= largest:
        if whole:
            return whole[0]
        raise _engine_refusal(plan)  # only shards train it, and whole copies fit: it trains no way
    needs_sharded = training_memory_gib(plan, model=model, sharded=True, device=device)
    if sharded and needs_sharded <= largest:
        return sharded[0]
    needs = needs_sharded if sharded else needs_whole
    raise Unprocessable(
        reasons.memory_exceeded(model=model["id"], needs_gib=needs, precision=plan.precision, pool=pool.name,
                                has_gib=largest, uniform=len(set(memories)) == 1),
        details={"field": "model", "needsGiB": round(needs, 1), "hasGiB": largest, "precision": plan.precision},
    )
