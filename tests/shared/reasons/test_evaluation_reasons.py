"""The sentences of evaluations and comparisons (shared/reasons/evaluations.py), word for word."""

from shared import reasons


def test_the_spec_comparison_sentence():
    assert reasons.comparison_weights_unreadable("snap-1") == (
        "branch comparisons cannot evaluate snapshot snap-1 yet: its weights are in a layout a comparison does not load")


def test_evaluation_sentences():
    assert reasons.evaluation_snapshot_unreadable("snap-1") == (
        "snapshot snap-1's weights are in a layout this deployment cannot load for an evaluation")
    assert reasons.evaluation_other_model(snapshot_id="snap-1", snapshot_model="A", model="B") == (
        "snapshot snap-1 holds an adapter of A, and this evaluation scores B")
    assert reasons.judge_unknown("ep-1") == (
        "judge ep-1 is not an endpoint of this deployment; `training endpoints get` lists them")
    assert reasons.judge_ended("ep-1", "FAILED") == (
        "judge endpoint ep-1 is FAILED; start another endpoint to judge with")
    assert reasons.evaluation_judge_not_ready("ep-1", "QUEUED") == (
        "judge endpoint ep-1 is QUEUED; an evaluation scores with a judge only while it is READY")
    assert reasons.evaluation_waits_for_judge("ep-1", "STARTING", 120.0) == (
        "waiting up to 120s for judge endpoint ep-1 (STARTING) to be READY")
    assert reasons.comparison_ended("cmp-1", "CANCELLED") == "comparison cmp-1 has already ended (CANCELLED)"
    assert reasons.evaluation_judge_unparsable(3, "ep-1") == (
        "judge endpoint ep-1 answered 3 row(s) with no score; those rows have no judge score")
    assert reasons.evaluation_failed("the disk is full") == "evaluation failed: the disk is full"
    assert reasons.evaluation_rows_not_ready("eval-1", "RUNNING") == (
        "evaluation eval-1 is RUNNING; its per-row results exist once it has SUCCEEDED")
    assert reasons.evaluation_ended("eval-1", "FAILED") == "evaluation eval-1 has already ended (FAILED)"
    assert reasons.evaluation_succeeded(12, 1.23456) == "scored 12 row(s): loss 1.2346"
    assert reasons.evaluation_succeeded(2, None) == "scored 2 row(s)"


def test_comparison_sentences():
    assert reasons.comparison_other_models({"snap-1": "A", "snap-2": "B"}) == (
        "a comparison scores snapshots of one base model, and these hold adapters of several: snap-1 (A), snap-2 (B)")
    assert reasons.evaluated_snapshot_unknown("snap-9") == "snapshot snap-9 does not exist"
