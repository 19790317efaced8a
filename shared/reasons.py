"""Every sentence a user can see, in one place.

SPEC.md quotes some of these word for word and scripts match them verbatim, so each one is a
constant or a small formatter here and nowhere else. Tests check them letter for letter.
"""

from __future__ import annotations


def engine_refused(*, method: str, kl_penalty: float, restores_weights: bool, gpus: int) -> str:
    """SPEC 3.1: the resolver found no engine for what the run asked for."""
    sentence = f"this deployment does not train {method}"
    if kl_penalty > 0:
        sentence += " with a KL penalty"
    if restores_weights:
        sentence += " over an inherited adapter"
    return sentence + f" on {gpus} GPU(s)"


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


def comparison_weights_unreadable(snapshot_id: str) -> str:
    return (
        f"branch comparisons cannot evaluate snapshot {snapshot_id} yet: "
        "its weights are in a layout a comparison does not load"
    )


def endpoint_stopped_before_request(endpoint_id: str) -> str:
    return f"endpoint {endpoint_id} was stopped before this request reached it"


# --- Plans that can never fit (SPEC 3.1, 5): refused at submission, each with its own sentence.

def gpus_exceed_every_node(*, gpus: int, pool: str, largest_node_gpus: int) -> str:
    return (
        f"this run asks for {gpus} GPU(s) of one node, and the largest node of pool {pool} "
        f"has {largest_node_gpus}"
    )


def gpus_exceed_quota(*, gpus: int, workload: str, pool: str, quota_gpus: int) -> str:
    return (
        f"this run asks for {gpus} GPU(s), and workload {workload} may hold at most "
        f"{quota_gpus} GPU(s) in pool {pool}"
    )


def precision_unsupported(*, precision: str, model: str, supported: list[str]) -> str:
    return (
        f"model {model} does not train in {precision} here; it supports "
        + ", ".join(supported)
    )


# --- Detail sentences stored on resources that stopped or failed.

CANCELLED_BY_USER = "cancelled by the user"
CANCELLED_WHILE_QUEUED = "cancelled by the user before it was granted GPUs"


def run_failed(error: str) -> str:
    return f"training failed: {error}"
