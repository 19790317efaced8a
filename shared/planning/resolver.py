"""The plan decides (SPEC 3.1): pick the engine that trains a plan on a dataset of some format,
or refuse it with the sentence users see. What engines there are, and what each trains (its
method, GPU counts, precisions, restores, dataset formats), is read from their declarations in
shared/planning/engines.py at each call. `startable_runs` lists every combination a model can start by asking
`resolve` itself, pool by pool, for a plan at the schema's defaults, so `base-models get MODEL`
and the resolver never disagree.

Of the engines that train a plan, it picks the first (whole copies, DDP, before shards, FSDP2)
whose memory estimate fits the GPUs of a node that could take it, and refuses a plan that no
engine fits (`training_memory_gib`, below, says how that is estimated).
"""

from __future__ import annotations

from itertools import product
from typing import Any

from shared import reasons
from shared.config.deployment import Pool
from shared.data.datasets import FORMATS
from shared.errors import Unprocessable, ValidationFailed
from shared.planning import engines
from shared.planning.engines import ALL_RESTORES, RESTORE_NONE, EngineSpec
from shared.planning.gpu_share import rollout_server_gib
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
    (shared/data/datasets.py FORMATS; None: whatever the dataset, as `startable_runs` asks) and
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
    pools that would take it and the memory per GPU it is estimated to need (null: size unknown).

    It asks `resolve` itself, pool by pool, memory fit included, so the list and the resolver
    cannot disagree. The candidates are all the resolver could accept: a GPU count or precision the
    model does not declare, or a method no engine trains, is always refused."""
    assumes = startable_assumptions()
    rows: dict[tuple[Any, ...], dict[str, Any]] = {}
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
                needs = training_memory_gib(plan, model=model, sharded=spec.shards_weights)
                rows[key] = {"method": method, "gpus": gpus, "precision": precision, "klPenalty": kl,
                             "restore": restore, "engine": spec.name, "pools": [],
                             "memoryGiB": None if needs is None else round(needs, 1)}
            rows[key]["pools"].append(pool.name)
    return list(rows.values())


# --- Will it fit? A plan's memory per GPU, estimated before anything is loaded.
#
# Per GPU (every DDP rank holds a whole copy of the model and adapter; a sharded engine's ranks
# hold 1/gpus of the weights, adapter, gradients and optimizer state, plus the two layers FSDP2
# gathers whole at a time, `gathered_unit_bytes`):
#   base weights     parameters x bytes of the precision (fp32 4, bf16/fp16 2); frozen, no grads
#   LoRA adapter     trainable parameters x 16 bytes: the fp32 weight, its fp32 gradient and
#                    Adam's two fp32 moments (PEFT keeps adapters in fp32 under bf16/fp16 autocast)
#   activations      with activation checkpointing (what a plan is admitted on): each layer's input
#                    kept, plus one layer recomputed at a time, about 16 hidden-sized tensors:
#                    microBatch x seq x hidden x activation bytes x (layers + 16); and the logits
#                    and their gradient in fp32: microBatch x seq x vocab x 4 x 2.
#                    Without it (what an sft engine trains with on CUDA when that fits the GPU:
#                    engines/kit.py `activation_checkpointing`), every layer keeps what its backward
#                    reads, about 28 hidden-sized tensors of activation bytes per token: measured on
#                    CPU as 54.6 x hidden bytes per token per layer in bf16 (autograd's saved tensors,
#                    weights left out) for a Qwen3 layer with FFN 3 x hidden and LoRA on every linear
#                    layer: the inputs of each LoRA-wrapped projection, the RMS norms' fp32 copies,
#                    q, k, v, the attention output and the gated MLP's four FFN-wide tensors.
#                    microBatch x seq x hidden x activation bytes x 28 x layers
#   runtime          0.5 GiB for the CUDA context, allocator slack and communication buffers
#   rollout server   grpo only: the serving process beside the trainer on each GPU, with its own
#                    copy of the base weights, the KV cache of its rank's completions at full length
#                    and its runtime (shared/planning/gpu_share.py `rollout_server_gib`)
# Shapes come from the model's description (hiddenSize, layers, vocabSize: a real model's config.json
# through shared/models/facts.py, a built-in's spec), else, for a model whose files the API cannot read,
# from the parameter count of a typical decoder (Llama/Qwen-like): parameters ~ 12 x layers x hidden^2
# with layers ~ hidden / 128, so hidden ~ (parameters x 128 / 12)^(1/3); vocab ~ 32 x hidden.
# LoRA parameters: rank x layers x the (in + out) widths of each target module, in units of hidden
# for a Qwen-like layer (FFN 3 x hidden, grouped KV a quarter of hidden):
#   q_proj 2, k_proj 1.25, v_proj 1.25, o_proj 2, gate_proj 4, up_proj 4, down_proj 4  (all-linear:
#   18.5), any other module 2. For a 77M Qwen3-style model (hidden 640, 12 layers) at rank 16 this
#   gives 2.27M parameters; PEFT counts 2.26M.
# It is a rough estimate meant to refuse what can never fit (an 8B model in fp32 on 16 GiB), not
# to tune batch sizes; a node without memoryGiB is never refused.

GIB = 1024**3
BYTES_PER_PARAMETER = {"fp32": 4, "bf16": 2, "fp16": 2}
LORA_TRAINABLE_BYTES = 4 + 4 + 8  # fp32 weight + fp32 gradient + Adam's two fp32 moments
LORA_WIDTHS = {"q_proj": 2.0, "k_proj": 1.25, "v_proj": 1.25, "o_proj": 2.0,
               "gate_proj": 4.0, "up_proj": 4.0, "down_proj": 4.0}
OTHER_MODULE_WIDTH = 2.0
RECOMPUTED_LAYER_TENSORS = 16
UNCHECKPOINTED_LAYER_TENSORS = 28
RUNTIME_GIB = 0.5
GATHERED_LAYERS = 2  # FSDP2: the layer being computed and the one prefetched


def model_shape(model: dict[str, Any]) -> tuple[int, int, int]:
    """(hidden, layers, vocab) from the catalog entry, or estimated from its parameter count."""
    params = float(model["parameters"])
    hidden = int(model.get("hiddenSize") or max(1, round((params * 128 / 12) ** (1 / 3))))
    layers = int(model.get("layers") or max(1, round(hidden / 128)))
    vocab = int(model.get("vocabSize") or 32 * hidden)
    return hidden, layers, vocab


def lora_parameters(adapter: Adapter, *, hidden: int, layers: int) -> int:
    targets = adapter.target_modules
    if adapter.every_linear_layer:
        targets = list(LORA_WIDTHS)
    elif isinstance(targets, str):
        targets = [targets]
    width = sum(LORA_WIDTHS.get(name, OTHER_MODULE_WIDTH) for name in targets)
    return int(adapter.rank * layers * width * hidden)


def training_memory_gib(plan: TrainingPlan, *, model: dict[str, Any], sharded: bool = False) -> float | None:
    """About how many GiB each GPU needs to train `plan` (None when the model's size is unknown):
    every GPU with a whole copy of the model (DDP, one GPU), or `sharded` across the plan's GPUs (FSDP2).
    A grpo plan's GPUs also hold the rollout server (shared/planning/gpu_share.py)."""
    trainer = trainer_memory_gib(plan, model=model, sharded=sharded)
    if trainer is None or not plan.is_grpo:
        return trainer
    hidden, layers, _ = model_shape(model)
    return trainer + rollout_server_gib(plan, parameters=float(model["parameters"]), hidden=hidden, layers=layers)


def trainer_memory_gib(plan: TrainingPlan, *, model: dict[str, Any], sharded: bool = False,
                       activation_checkpointing: bool = True) -> float | None:
    """What the training process alone needs on each GPU (the rollout server beside it not counted),
    with activation checkpointing (how plans are admitted) or without it (what an engine trains with
    when that fits)."""
    if not model.get("parameters"):
        return None
    precision = plan.precision
    hidden, layers, vocab = model_shape(model)
    gpus = plan.execution.gpus
    micro_batch = plan.hyperparameters.micro_batch(gpus)
    seq = plan.hyperparameters.max_seq_length
    weights = float(model["parameters"]) * BYTES_PER_PARAMETER[precision]
    adapter = lora_parameters(plan.adapter, hidden=hidden, layers=layers) * LORA_TRAINABLE_BYTES
    if sharded:
        weights, adapter = weights / gpus + gathered_unit_bytes(model, precision), adapter / gpus
    kept = layers + RECOMPUTED_LAYER_TENSORS if activation_checkpointing else layers * UNCHECKPOINTED_LAYER_TENSORS
    activations = micro_batch * seq * hidden * BYTES_PER_PARAMETER[precision] * kept
    logits = micro_batch * seq * vocab * 4 * 2
    return (weights + adapter + activations + logits) / GIB + RUNTIME_GIB


def gathered_unit_bytes(model: dict[str, Any], precision: str) -> float:
    """What FSDP2 holds whole besides each GPU's shards: the unit it all-gathers for the layer it
    computes and the one it prefetches (two decoder layers), or the embedding unit when that is
    larger (with tied embeddings the head shares it)."""
    hidden, layers, vocab = model_shape(model)
    embedding = float(vocab * hidden)
    per_layer = max(0.0, float(model["parameters"]) - embedding) / layers
    return max(GATHERED_LAYERS * per_layer, embedding) * BYTES_PER_PARAMETER[precision]


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
    needs_whole = training_memory_gib(plan, model=model)
    if largest is None or needs_whole is None or needs_whole <= largest:
        if whole:
            return whole[0]
        raise _engine_refusal(plan)  # only shards train it, and whole copies fit: it trains no way
    needs_sharded = training_memory_gib(plan, model=model, sharded=True)
    if sharded and needs_sharded <= largest:
        return sharded[0]
    needs = needs_sharded if sharded else needs_whole
    raise Unprocessable(
        reasons.memory_exceeded(model=model["id"], needs_gib=needs, precision=plan.precision, pool=pool.name,
                                has_gib=largest, uniform=len(set(memories)) == 1),
        details={"field": "model", "needsGiB": round(needs, 1), "hasGiB": largest, "precision": plan.precision},
    )
