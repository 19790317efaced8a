"""Plans refused at submission (SPEC 3.1, 3.3, 4, 5), each with its own sentence: what no engine
trains, plans that can never fit their pool or quota, branches that cannot restore what they ask for,
grpo settings, and what the memory estimate chose."""

from __future__ import annotations

from shared.reasons.api import body_field_refused as _body_field_refused
from shared.reasons.api import body_not_an_object as _body_not_an_object


def engine_refused(*, method: str, kl_penalty: float, restores_weights: bool, gpus: int) -> str:
    """SPEC 3.1: the resolver found no engine for what the run asked for."""
    sentence = f"this deployment does not train {method}"
    if kl_penalty > 0:
        sentence += " with a KL penalty"
    if restores_weights:
        sentence += " over an inherited adapter"
    return sentence + f" on {gpus} GPU(s)"


# How a sentence names the rows of each dataset format (shared/datasets.py FORMATS).
DATASET_FORMAT_ROWS = {"chat": "chat messages", "completion": "prompt and completion rows", "prompt": "prompt rows"}


def dataset_format_refused(*, dataset: str, dataset_format: str, method: str, trains_on: list[str]) -> str:
    """SPEC 3.1: no engine of the run's method declares the format of its dataset's rows;
    `trains_on` is the formats they declare, in FORMATS order."""
    named = [DATASET_FORMAT_ROWS.get(f, f"{f} rows") for f in trains_on]
    if not named:
        listed = "no dataset rows in this deployment"
    else:
        listed = named[-1] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
    return f"dataset {dataset} holds {dataset_format} rows; {method} trains on {listed}"


def dataset_modality_refused(*, dataset: str, model: str, dataset_modality: str, evaluated: bool = False) -> str:
    """SPEC 3.1 (issue 17): a dataset with images for a text model, or one without for an
    image-text model; said of a run, or (`evaluated`) of an evaluation."""
    if dataset_modality == "image-text":
        return f"dataset {dataset} holds images, and model {model} is a text model that cannot read them"
    uses = "is evaluated on" if evaluated else "trains on"
    return (f"dataset {dataset} holds no images, and model {model} is an image-text model "
            f"that {uses} rows with images")


IMAGE_ROWS_ARE_CHAT = "rows with images train as chat messages; this dataset's rows are prompt and completion rows"


IMAGE_ROWS_NOT_PACKED = "packing does not take rows with images; train this dataset with packing off"


def training_state_gpu_mismatch(*, saved_gpus: int, run_gpus: int) -> str:
    """SPEC 3.3: a trainingState restore on another GPU count."""
    return (
        f"this snapshot's training state was saved across {saved_gpus} GPU(s), "
        f"and this run trains on {run_gpus}. Restore its weights instead"
    )


TRAINING_STATE_UNREADABLE = (
    "this snapshot's training state is in a layout this deployment cannot read as a branch source. "
    "Restore its weights instead"
)


WEIGHTS_UNREADABLE = "this snapshot's weights are in a layout this deployment cannot read as a branch source"


def gpus_exceed_every_node(*, gpus: int, pool: str, largest_node_gpus: int, kind: str = "run") -> str:
    return (
        f"this {kind} asks for {gpus} GPU(s) of one node, and the largest node of pool {pool} "
        f"has {largest_node_gpus}"
    )


def gpus_exceed_quota(*, gpus: int, workload: str, pool: str, quota_gpus: int, kind: str = "run") -> str:
    return (
        f"this {kind} asks for {gpus} GPU(s), and workload {workload} may hold at most "
        f"{quota_gpus} GPU(s) in pool {pool}"
    )


def precision_unsupported(*, precision: str, model: str, supported: list[str]) -> str:
    return (
        f"model {model} does not train in {precision} here; it supports "
        + ", ".join(supported)
    )


def snapshot_has_no_training_state(snapshot_id: str) -> str:
    return f"snapshot {snapshot_id} holds no training state. Restore its weights instead"


def branch_changes(*, what: str, parent: str, plan: str) -> str:
    """A trainingState branch must train the way its parent did (method, engine, precision)."""
    return (
        f"a trainingState branch trains the way its parent did, and this plan changes its {what} "
        f"from {parent} to {plan}. Restore its weights instead"
    )


def branch_other_model(*, snapshot_id: str, snapshot_model: str, plan_model: str) -> str:
    return f"snapshot {snapshot_id} holds an adapter of {snapshot_model}, and this plan trains {plan_model}"


def inherited_adapter_config_used(differences: str) -> str:
    """A weights branch whose plan sets other adapter settings than the adapter it inherits."""
    return (
        f"the plan's adapter settings differ from the inherited adapter's ({differences}): "
        "training uses the inherited adapter's config"
    )


def memory_exceeded(*, model: str, needs_gib: float, precision: str, pool: str, has_gib: float,
                    uniform: bool = True) -> str:
    """SPEC 3.1: the resolver's estimate of what training needs per GPU is more than the nodes have."""
    return (
        f"model {model} needs about {needs_gib:.1f} GiB per GPU to train in {precision} with this adapter, "
        f"and the nodes of pool {pool} have {'' if uniform else 'at most '}{has_gib:.1f} GiB per GPU"
    )


def activation_checkpointing_chosen(*, on: bool, needs_gib: float, gpu_gib: float, share: float) -> str:
    """An sft run on CUDA says whether it recomputes activations (engines/kit.py
    `activation_checkpointing`): off when the memory estimate without it fits `share` of the GPU."""
    verb = "exceeds" if on else "fits in"
    return (f"activation checkpointing {'on' if on else 'off'}: the memory estimate without it, {needs_gib:.1f} GiB, "
            f"{verb} {share:.0%} of the GPU's {gpu_gib:.1f} GiB")


GRPO_NEEDS_REWARDS = "a grpo run needs at least one reward in grpo.rewards"


def grpo_batch_not_a_multiple(*, batch_size: int, generations: int) -> str:
    """hyperparameters.batchSize counts completions per step: whole groups of numGenerations."""
    return (f"batchSize {batch_size} is not a multiple of grpo.numGenerations {generations}; a grpo step trains "
            "on whole groups of completions of one prompt")


def batch_not_split(*, batch_size: int, gpus: int, accumulation: int) -> str:
    """SPEC 3.2: batchSize is the global batch whatever the GPU count, so it must split evenly over
    the run's GPUs and micro-batches (for a grpo run: its completions per step)."""
    return (f"batchSize {batch_size} does not split evenly over {gpus} GPU(s) x gradientAccumulation {accumulation}; "
            "batchSize is the global batch, the same on any GPU count, so it must be a multiple of their product")


GRPO_NO_VALIDATION = "a grpo run scores no validationDataset yet; its metrics carry the reward of every step"


def grpo_on_sft_run(method: str) -> str:
    return f"grpo settings apply to grpo runs, and this run's method is {method}"


def target_modules_unknown(*, model: str, unknown: list[str], modules: list[str]) -> str:
    """adapter.targetModules names modules the model does not have (the catalog's loraTargetModules)."""
    return (f"model {model} has no module {', '.join(unknown)} to adapt; its LoRA target modules are "
            f"{', '.join(modules)} (or \"all-linear\")")


def epochs_too_many_steps(*, epochs: float, rows: int, batch_size: int, steps: int, max_steps: int) -> str:
    """A plan by epochs whose step count (epochs x rows / batchSize) passes what a run may train."""
    return (f"{epochs:g} epoch(s) of {rows} row(s) at batchSize {batch_size} make {steps} steps, and a run trains "
            f"{max_steps} at most; train fewer epochs or set maxSteps")


# --- The run plan's shape and stored plans (shared/plans/: its schema, the typed plan, its check)

PLAN_NOT_AN_OBJECT = _body_not_an_object("plan")
TARGET_MODULES_SHAPE = 'must be "all-linear" or a non-empty list of module names'
BATCH_NOT_A_MULTIPLE_OF_ACCUMULATION = "must be a multiple of gradientAccumulation"


def plan_field_refused(field: str, problem: str) -> str:
    """A plan field the schema or a rule refuses: `plan field hyperparameters.epochs: ...`."""
    return _body_field_refused("plan", field, problem)


def validation_format_differs(*, validation: str, validation_format: str, dataset: str, dataset_format: str) -> str:
    return (f"validation dataset {validation} holds {validation_format} rows and dataset {dataset} holds "
            f"{dataset_format} rows; a run validates on rows of its training format")


def unknown_field_did_you_mean(suggestion: str) -> str:
    """A request's key that no plan field has, with the field it was likely meant to be (issue 30:
    `max_steps` -> maxSteps; a sibling's name, or a path from the plan's top)."""
    return f"Unknown field. Did you mean {suggestion}?"


def plan_field_unknown(field: str) -> str:
    """A stored plan holding a key no field of the plan has (training_plan.py reads none by half)."""
    return f"plan field {field} is not a field of a run plan"


def plan_field_missing(field: str) -> str:
    """A stored plan without a field that has no default (model, dataset)."""
    return f"plan field {field} is missing, and it has no default"


# --- How long a run trains: maxSteps is the step a run ends at, on its own step count (docs/api.md)

def branch_trains_no_step(*, snapshot_id: str, snapshot_step: int, planned: str) -> str:
    """A trainingState branch whose plan ends at or before its snapshot's step (issue 30): it
    continues the snapshot's step count, so it would train nothing. `planned` is `planned_by_steps`
    or `planned_by_epochs`."""
    return (f"this trainingState branch would train no step: it continues the step count of snapshot "
            f"{snapshot_id} from step {snapshot_step}, and {planned}. maxSteps is the step a run ends at, not the "
            f"steps it adds: set maxSteps above {snapshot_step} (maxSteps {snapshot_step + 50} trains 50 steps), "
            "or restore its weights to count steps from 0")


def planned_by_steps(max_steps: int) -> str:
    return f"maxSteps {max_steps} ends it at step {max_steps}"


def planned_by_epochs(*, epochs: float, rows: int, batch_size: int, steps: int) -> str:
    return f"{epochs:g} epoch(s) of {rows} row(s) at batchSize {batch_size} end it at about step {steps}"
