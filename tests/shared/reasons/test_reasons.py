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


def test_bad_input_sentences():
    """Issue 14: every bad input a 4xx with a sentence."""
    assert reasons.json_too_deep(64) == "nests lists and objects more than 64 levels deep"
    assert reasons.lone_surrogate(0xD800) == (
        "holds a lone surrogate (\\ud800), which is not text; a surrogate escape must be half of a pair")
    assert reasons.lone_surrogate_in_key(0xDC00) == (
        "has a key holding a lone surrogate (\\udc00), which is not text; a surrogate escape must be half of a pair")
    assert reasons.request_body_refused(None, "nests lists and objects more than 64 levels deep") == (
        "the request body nests lists and objects more than 64 levels deep")
    assert reasons.request_body_refused("messages[0].content", "holds X") == (
        "the request body's field messages[0].content holds X")
    assert reasons.status_empty("runs", ["QUEUED", "RUNNING"]) == (
        "?status= names no state of runs; name one or more of QUEUED, RUNNING, or leave it out")
    assert reasons.status_empty("endpoints", ["READY"], param="phase") == (
        "?phase= names no state of endpoints; name one or more of READY, or leave it out")
    assert reasons.log_after_invalid("18446744073709551616", 4294967295) == (
        "after must be a whole number from 0 to 4294967295, not '18446744073709551616'")
    assert reasons.target_modules_unknown(model="m", unknown=["c_attn", "x"], modules=["q_proj", "v_proj"]) == (
        'model m has no module c_attn, x to adapt; its LoRA target modules are q_proj, v_proj (or "all-linear")')
    assert reasons.epochs_too_many_steps(epochs=10_000, rows=1200, batch_size=1, steps=12_000_000,
                                         max_steps=10_000_000) == (
        "10000 epoch(s) of 1200 row(s) at batchSize 1 make 12000000 steps, and a run trains 10000000 at most; "
        "train fewer epochs or set maxSteps")
    assert reasons.snapshot_import_path_too_long(4096, 255) == (
        "path is longer than a path on the API's machine may be (4096 bytes, and 255 for each name in it)")
    assert reasons.endpoint_answer_unreadable("ep-1", 500) == (
        "the serving process of endpoint ep-1 answered 500 without a readable error")
    assert reasons.endpoint_process_failed("ep-1", "out of memory") == (
        "the serving process of endpoint ep-1 failed to answer: out of memory")
    assert reasons.ENDPOINT_NAME_DOTS == "may not be `.` or `..`, which a URL path reads as a step, not a name"
    assert reasons.WORKLOAD_RULE == "workload must be 1 to 64 letters, digits or `_.-`"


def test_image_text_sentences():
    assert reasons.dataset_modality_refused(dataset="ds-1", model="builtin/tiny-qwen3",
                                            dataset_modality="image-text") == (
        "dataset ds-1 holds images, and model builtin/tiny-qwen3 is a text model that cannot read them")
    assert reasons.dataset_modality_refused(dataset="ds-2", model="builtin/tiny-gemma3-vision",
                                            dataset_modality="text") == (
        "dataset ds-2 holds no images, and model builtin/tiny-gemma3-vision is an image-text model "
        "that trains on rows with images")
    assert reasons.dataset_modality_refused(dataset="ds-2", model="builtin/tiny-gemma3-vision",
                                            dataset_modality="text", evaluated=True) == (
        "dataset ds-2 holds no images, and model builtin/tiny-gemma3-vision is an image-text model "
        "that is evaluated on rows with images")
    assert reasons.image_row_too_long(line=3, tokens=600, max_length=512) == (
        "dataset line 3: the row is 600 tokens with its images, longer than maxSeqLength 512; "
        "a row with images is never cut, since an image would lose its tokens")
    assert reasons.IMAGE_ROWS_ARE_CHAT == (
        "rows with images train as chat messages; this dataset's rows are prompt and completion rows")
    assert reasons.IMAGE_ROWS_NOT_PACKED == "packing does not take rows with images; train this dataset with packing off"
    assert reasons.request_part_refused("messages[0].content[1].image_url.url", "is not valid base64") == (
        "messages[0].content[1].image_url.url is not valid base64")


def test_query_parameter_queue_cap_and_flower_sentences():
    """Issue 26, item 6: the query parameters' rules, the cap on queued claims, Flower's gate."""
    assert reasons.query_workload_invalid() == "?workload= must name a workload: 1 to 64 letters, digits or `_.-`"
    assert reasons.query_id_invalid("run", "run", "run") == (
        "?run= must be the id of a run: `run-` then 1 to 64 letters, digits, `_` or `-`")
    assert reasons.query_file_name_invalid("name", 255) == (
        "?name= must be a file name: 1 to 255 characters, no `/` and no control characters")
    assert reasons.WORKLOAD_NAME_RULE == "a workload name is 1 to 64 letters, digits or `_.-`"
    assert reasons.queued_claims_cap(workload="team-a", cap=100, queued=99, asked=2) == (
        "workload team-a has 99 run(s), evaluation(s) and endpoint(s) queued for GPUs, and this would queue 2 more; "
        "this deployment lets one workload queue 100 at most. Wait for some to start, or cancel some")
    assert reasons.FLOWER_NEEDS_BASIC_AUTH == (
        "flower: set FLOWER_BASIC_AUTH (user:password); this deployment serves no Flower route without it")
    assert reasons.FLOWER_AUTH_REQUIRED == "Flower needs its basic auth (user:password) on every route"


def test_issue_26_sentences():
    assert reasons.manifest_refused(None, reasons.json_too_deep(64)) == (
        "snapshot.json nests lists and objects more than 64 levels deep")
    assert reasons.manifest_refused("model", reasons.lone_surrogate(0xD800)) == (
        "snapshot.json: model holds a lone surrogate (\\ud800), which is not text; a surrogate escape must be half "
        "of a pair")
    assert reasons.manifest_too_large(4194304) == "snapshot.json is larger than a manifest may be (4194304 bytes)"
    assert reasons.snapshot_archive_twice("s.tar", "adapter/a") == (
        "s.tar holds adapter/a twice; a snapshot directory has one file of each name")
    assert reasons.snapshot_archive_outside_root("s.tar", "other/a", "snap") == (
        "s.tar holds other/a, outside the snapshot directory snap/ that holds its manifest; an archive holds one "
        "snapshot directory")
    assert reasons.snapshot_archive_outside_parts("s.tar", "x", []) == (
        "s.tar holds x, which is in no part of the snapshot (it declares no parts); a snapshot directory holds its "
        "manifest and its parts' files only")
    assert reasons.number_not_finite("1" * 50) == (
        f"is {'1' * 37}..., which is not a finite number; every number must be finite")
