"""The sentences issue 28 moved from where they were raised into shared/reasons/, word for word:
each keeps the words it had inline (the tests of each area check them where they are said too)."""

from __future__ import annotations

import pytest

from shared import reasons

WORDS = [
    # the deployment config (shared/config.py, shared/tracker_config.py)
    (reasons.config_refused("pools", reasons.CONFIG_NO_POOLS),
     "deployment config: pools must map at least one pool name to its nodes"),
    (reasons.config_refused("defaultPool", reasons.config_pool_undeclared("q")),
     "deployment config: defaultPool names pool q, which is not declared"),
    (reasons.config_refused("p.nodes[0]", reasons.config_node_repeated("n")), "deployment config: p.nodes[0] repeats node name n"),
    (reasons.config_workload_invalid("a b", reasons.WORKLOAD_NAME_RULE),
     "names workload 'a b'; a workload name is 1 to 64 letters, digits or `_.-`"),
    (reasons.config_file_missing("/x.yaml"), "deployment config: file /x.yaml does not exist"),
    (reasons.config_not_yaml("/x.yaml", "bad"), "deployment config: /x.yaml is not valid YAML: bad"),
    (reasons.config_trackers_list(["tensorboard", "mlflow"]), "must be a list of tracker names (tensorboard, mlflow)"),
    (reasons.config_tracker_unknown("x", ["tensorboard"]), "names x, which is not a tracker (tensorboard)"),
    (reasons.config_tracker_setting_needed("mlflow"), "must be set when trackers.reportTo names mlflow"),
    (reasons.config_wandb_mode("cloud"), "must be online or offline, not 'cloud'"),
    # a serving process's answers (shared/serving/openai_app.py, generation.py)
    (reasons.serving_parameter_not_number("max_tokens", True), "max_tokens must be a whole number"),
    (reasons.serving_parameter_not_number("temperature", False), "temperature must be a number"),
    (reasons.serving_parameter_out_of_bounds("temperature", 0.0, 2.0, 3), "temperature must be between 0.0 and 2.0, got 3"),
    (reasons.serving_parameter_out_of_bounds("max_tokens", 1, None, 0), "max_tokens must be at least 1, got 0"),
    (reasons.serving_n_invalid(16), "n must be a whole number between 1 and 16"),
    (reasons.serving_model_unknown("m"), "The model `m` does not exist."),
    (reasons.serving_adapter_twice("a"), "The lora adapter 'a' has already been loaded."),
    (reasons.serving_adapter_unknown("a"), "The lora adapter 'a' cannot be found."),
    (reasons.serving_adapter_loaded("a", []), "Success: LoRA adapter 'a' added successfully."),
    (reasons.serving_adapter_loaded("b", ["a"]), "Success: LoRA adapter 'b' added successfully (folded in place of 'a')."),
    (reasons.serving_adapter_unloaded("a"), "Success: LoRA adapter 'a' removed successfully."),
    (reasons.serving_too_many_completions(16, 4, 5), "n times the number of prompts must be at most 16 on this server, got 4 x 5"),
    (reasons.serving_prompt_shape(16), "prompt must be a string, a list of token ids, or a list of 1 to 16 of either"),
    (reasons.serving_message_without_role(2), "messages[2] must be an object with a role"),
    (reasons.serving_message_text_only(1), "messages[1]: this model reads text parts only"),
    (reasons.serving_message_content(0), "messages[0].content must be a string"),
    (reasons.serving_context_too_long(most=32, asked=40, prompt=30, completion=10),
     "This model's maximum context length is 32 tokens. However, you requested 40 tokens (30 in the messages, "
     "10 in the completion). Please reduce the length of the messages or completion."),
    (reasons.serving_weights_mismatch("/w", ["a"], []), "/w does not hold this model's weights: missing ['a'], unexpected []"),
    (reasons.load_spec_value_refused("dtype", "fp8", ["bf16", "fp32"]), "load spec: dtype fp8 is not one of bf16, fp32"),
    (reasons.load_spec_adapter_is_base("m"), "load spec: adapter name m is also the base model's served name"),
    (reasons.load_spec_field_missing("model"), "load spec: field model is missing"),
    (reasons.load_spec_precision_unsupported("m", "fp16", ["bf16"]), "model m does not support precision fp16; it supports bf16"),
    (reasons.adapter_without_config("a", "/d"), "adapter a: /d holds no adapter_config.json"),
    (reasons.model_not_in_catalog("nope/nope"), "model nope/nope is not in this deployment's catalog"),
    (reasons.builtin_model_unknown("x", "a, b"), "there is no built-in model x; built-in models are a, b"),
    (reasons.model_dir_without_config("m", "/d"), "catalog entry m points at /d, which holds no config.json"),
    (reasons.precision_unknown("fp8", ["bf16", "fp32"]), "precision fp8 is not one of bf16, fp32"),
    (reasons.fold_not_linear("lm_head", "Embedding"), "lm_head is a Embedding, not a linear layer"),
    (reasons.fold_shape_mismatch("q", (4, 4), (4, 2)), "q is (4, 4), the adapter's delta (4, 2)"),
    # images, datasets
    (reasons.image_media_type_refused("text/plain", ["image/png"]), "is a text/plain data: URL; images are image/png"),
    (reasons.image_too_large(10), "holds an image larger than 10 bytes"),
    (reasons.image_too_many_pixels(5, 6, 20), "is an image of 5x6 pixels; the most is 20 pixels"),
    (reasons.image_format_refused("BMP", ["image/png"]), "is a BMP image; images are image/png"),
    (reasons.dataset_not_utf8(7), "the dataset is not UTF-8 text (byte 7)"),
    (reasons.dataset_line_refused(3, None, "is not JSON"), "dataset line 3 is not JSON"),
    (reasons.dataset_line_refused(3, "messages", "must be a list"), "dataset line 3, field messages, must be a list"),
    (reasons.dataset_upload_refused(2, "prompt", "is missing", 0), "dataset line 2, field prompt: is missing"),
    (reasons.dataset_upload_refused(2, "prompt", "is missing", 3), "dataset line 2, field prompt: is missing (and 3 more)"),
    # rewards
    (reasons.reward_function_or_judge("grpo.rewards.0", both=True),
     "grpo.rewards.0: a reward names either a function or a judge endpoint, not both"),
    (reasons.reward_function_unknown_here("rewards.0", "f", ["exact_match", "regex"]),
     "rewards.0.function: no reward function f in this deployment; it has exact_match, regex"),
    (reasons.length_reward_without_target("rewards.1"),
     "rewards.1.target: the length reward needs a target length of 1 or more characters"),
    # snapshots, requests, endpoints, evaluations
    (reasons.manifest_lacks("snapshot.json", ["step", "gpus"]), "snapshot.json lacks step, gpus"),
    (reasons.manifest_unreadable("snapshot.json", "Permission denied"), "snapshot.json cannot be read (Permission denied)"),
    (reasons.import_dir_without_manifest("/d", "snapshot.json"),
     "/d holds no snapshot.json; a snapshot directory starts with its manifest"),
    (reasons.snapshot_path_not_absolute("x"), "path x must be absolute: the API reads it on its own machine"),
    (reasons.body_field_refused("endpoint", "gpus", "Not a valid integer."), "endpoint field gpus: Not a valid integer."),
    (reasons.body_field_refused("evaluation", "rewards.0.judge", reasons.EVALUATION_REWARD_JUDGE),
     "evaluation field rewards.0.judge: an evaluation's rewards are reward functions; its judge is the `judge` field"),
    (reasons.body_not_an_object("comparison"), "the comparison must be a JSON object"),
    (reasons.resource_unknown("dataset", "ds-x"), "dataset ds-x does not exist"),
    (reasons.workload_forbidden("team-b"), "this token may not act for workload team-b"),
    (reasons.page_limit_invalid("'x'", 200), "limit must be a whole number from 1 to 200, not 'x'"),
    (reasons.claim_exists("run", "run-a", "claim-b", "WAITING"), "run run-a already has claim claim-b (WAITING)"),
    (reasons.endpoint_already_stopped("ep-1", "TERMINATED"), "endpoint ep-1 has already stopped (TERMINATED)"),
    (reasons.endpoint_log_lines_invalid(10000), "lines must be a whole number from 1 to 10000"),
    (reasons.evaluation_cancel_event("the user", ended=True), "cancelled by the user"),
    (reasons.evaluation_cancel_event("the user", ended=False), "cancel requested by the user"),
    (reasons.comparison_queued(3, "default"), "queued 3 evaluation(s) in pool default"),
    # the events of work on a worker
    (reasons.work_taken("n/h/1", "run", ["cpu:0", "cpu:1"], 3), "worker n/h/1 took the run on cpu:0, cpu:1 (fence 3)"),
    (reasons.model_loaded("m", 1.23, "fp32", 0.5), "loaded m (1.2M parameters, fp32) in 0.5s"),
    (reasons.run_succeeded(8, 2.5, 1.25), "succeeded at step 8: loss 2.5000 -> 1.2500"),
    (reasons.run_succeeded(8, None, None), "succeeded at step 8"),
    (reasons.run_paused_by_user(4), "paused at step 4; its GPUs are released. `training runs resume` continues it exactly"),
    (reasons.snapshot_written("snap-1", 4, final=True), "snapshot snap-1 written at step 4 (final)"),
    (reasons.sft_started(model="m", rows=8, devices=["cpu:0"], packed=3, max_length=64, validation_rows=2,
                         per_device=2, loss=reasons.LOSS_COMPLETIONS, restore=reasons.restore_over_adapter(4, 2)),
     "training m on 8 rows on cpu:0, packed into 3 sequences of at most 64 tokens, validating on 2 rows, "
     "2 sequence(s) per device per micro-batch, the loss over the completions, over the adapter of step 4 "
     "(layout 2) with a fresh optimizer"),
    (reasons.sft_started(model="m", rows=8, devices=["cpu:0"], packed=None, max_length=64, validation_rows=0,
                         per_device=2, loss=reasons.loss_assistant_turns(5, 9), restore=""),
     "training m on 8 rows on cpu:0, 2 row(s) per device per micro-batch, the loss over the assistant turns "
     "(5 of 9 tokens)"),
    (reasons.grpo_started(model="m", prompts=4, devices=["cpu:0"], prompts_per_step=2, generations=4,
                          reference="base model", server="http://127.0.0.1:1", ready_s=1.0,
                          restore=reasons.restore_continuing(3, 2)),
     "training m with grpo on 4 prompts on cpu:0: 2 prompt(s) x 4 completions per step, KL reference base model; "
     "rollouts from a serving process at http://127.0.0.1:1 (ready in 1.0s), continuing the training state of "
     "step 3 (layout 2)"),
    (reasons.evaluation_scoring(rows=2, dataset="ds-x", model="m", snapshot="snap-1", dtype="fp32", device="cpu",
                                max_tokens=reasons.evaluation_max_tokens_text(8, "request", None)),
     "scoring 2 row(s) of ds-x with m and the adapter of snap-1 (fp32 on cpu, greedy, at most 8 token(s) (as asked))"),
    # the CLI and the local stack
    (reasons.api_unreachable("http://x"), "cannot reach the trainer API at http://x (is the stack up? run: training up)"),
    (reasons.api_timed_out("http://x", 30.0), "the trainer API at http://x did not answer within 30s"),
    (reasons.set_flag_invalid("x"), "--set takes PATH=VALUE, got 'x'"),
    (reasons.quickstart_model_missing("m", []), "the catalog has no m (it has: nothing)"),
    (reasons.stack_port_taken(8000), "port 8000 is taken by another program; pick another with: training up --port N"),
    (reasons.redis_not_answering("redis-server", 6390, 10.0), "redis-server did not answer PING on port 6390 within 10s"),
]


@pytest.mark.parametrize(("said", "words"), WORDS, ids=[w[:40] for _, w in WORDS])
def test_a_moved_sentence_keeps_its_words(said, words):
    assert said == words
