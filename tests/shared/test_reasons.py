"""The sentences SPEC.md quotes, word for word."""

from shared import reasons


def test_engine_refused():
    assert reasons.engine_refused(method="grpo", kl_penalty=0.1, restores_weights=True, gpus=4) == (
        "this deployment does not train grpo with a KL penalty over an inherited adapter on 4 GPU(s)")
    assert reasons.engine_refused(method="sft", kl_penalty=0, restores_weights=False, gpus=1) == (
        "this deployment does not train sft on 1 GPU(s)")


def test_branch_sentences():
    assert reasons.training_state_gpu_mismatch(saved_gpus=2, run_gpus=1) == (
        "this snapshot's training state was saved across 2 GPU(s), and this run trains on 1. "
        "Restore its weights instead")
    assert reasons.TRAINING_STATE_UNREADABLE == (
        "this snapshot's training state is in a layout this deployment cannot read as a branch source. "
        "Restore its weights instead")
    assert reasons.WEIGHTS_UNREADABLE == (
        "this snapshot's weights are in a layout this deployment cannot read as a branch source")
    assert reasons.comparison_weights_unreadable("snap-1") == (
        "branch comparisons cannot evaluate snapshot snap-1 yet: its weights are in a layout a comparison does not load")


def test_endpoint_sentence():
    assert reasons.endpoint_stopped_before_request("ep-1") == "endpoint ep-1 was stopped before this request reached it"
