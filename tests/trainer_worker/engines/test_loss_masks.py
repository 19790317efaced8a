"""Which tokens SFT takes its loss over (engines/loss_masks.py, issue 15): a chat row's assistant
turns, for any chat template, rendered turn by turn; every token with `trainOnPrompt`. On the real
tiny tokenizer and model; the Llama-3 and Gemma templates are those models' own turn formats set on
the tiny tokenizer (its vocabulary lacks their special tokens, so they tokenize as plain text: the
seams are harder to cut, not easier)."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from services.trainer_worker.engines.evaluate import score
from services.trainer_worker.engines.loss_masks import chat_row
from services.trainer_worker.engines.sft import loss_phrase, tokenized
from shared.errors import ValidationFailed
from shared.models.load_spec import load_model, load_spec_for
from shared.plans import parse_plan
from shared.serving.generation import Generator
from shared.store.artifacts import ArtifactRoot

TINY_ENTRY = {"id": "builtin/tiny-qwen3", "builtin": "tiny-qwen3"}
SAMPLE = resources.files("shared") / "data" / "sample_sft.jsonl"
CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Add: 2 + 3"},
                {"role": "assistant", "content": "5"}, {"role": "user", "content": "Reverse: stone"},
                {"role": "assistant", "content": "enots"}]

LLAMA3 = ("{{- bos_token }}{%- for message in messages %}"
          "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}"
          "{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
          "{%- endif %}")
GEMMA3 = ("{{ bos_token }}{%- for message in messages %}"
          "{%- set role = 'model' if message['role'] == 'assistant' else 'user' %}"
          "{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
          "{%- endfor %}{%- if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{%- endif %}")


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    return load_spec_for(entry=TINY_ENTRY, artifacts=ArtifactRoot(tmp_path_factory.mktemp("artifacts")),
                         served_model_name="base-test")


@pytest.fixture(scope="module")
def model_and_tokenizer(spec):
    return load_model(spec)


@pytest.fixture
def tokenizer(model_and_tokenizer):
    tokenizer = model_and_tokenizer[1]
    template = tokenizer.chat_template
    yield tokenizer
    tokenizer.chat_template = template


def trained_text(tokenizer, row) -> str:
    return tokenizer.decode([t for t, m in zip(row["input_ids"], row["assistant_masks"]) if m])


def untrained_text(tokenizer, row) -> str:
    return tokenizer.decode([t for t, m in zip(row["input_ids"], row["assistant_masks"]) if not m])


def test_the_tiny_template_trains_each_assistant_turn_and_its_end_of_turn(tokenizer):
    row = chat_row(tokenizer, CONVERSATION)
    assert trained_text(tokenizer, row) == "5<|im_end|>\nenots<|im_end|>\n"
    assert untrained_text(tokenizer, row) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nAdd: 2 + 3<|im_end|>\n<|im_start|>assistant\n"
        "<|im_start|>user\nReverse: stone<|im_end|>\n<|im_start|>assistant\n")
    assert len(row["input_ids"]) == len(row["assistant_masks"])


@pytest.mark.parametrize("template, ends", [(LLAMA3, "<|eot_id|>"), (GEMMA3, "<end_of_turn>\n")])
def test_other_templates_are_cut_turn_by_turn_too(tokenizer, template, ends):
    tokenizer.chat_template = template
    conversation = [m for m in CONVERSATION if m["role"] != "system"]
    row = chat_row(tokenizer, conversation)
    trained = trained_text(tokenizer, row)
    # each answer and its end of turn train, no user turn does (a merge at a seam may take a newline)
    assert trained.replace("\n", "").replace(" ", "") == f"5{ends}enots{ends}".replace("\n", "").replace(" ", "")
    assert "Add" not in trained and "Reverse" not in trained and "stone" not in trained


def test_train_on_prompt_trains_every_token(tokenizer):
    row = chat_row(tokenizer, CONVERSATION, train_on_prompt=True)
    assert all(row["assistant_masks"]) and trained_text(tokenizer, row) == tokenizer.apply_chat_template(
        CONVERSATION, tokenize=False)


def test_the_run_says_what_its_loss_is_taken_over(tokenizer):
    rows = tokenized([{"messages": CONVERSATION[1:3]}], tokenizer, train_on_prompt=False)
    trained = sum(rows[0]["assistant_masks"])
    assert loss_phrase(rows, train_on_prompt=False) == (
        f"the loss over the assistant turns ({trained} of {len(rows[0]['input_ids'])} tokens)")
    assert loss_phrase(rows, train_on_prompt=True) == "the loss over every token (trainOnPrompt)"
    completions = [{"prompt": "Add: 2 + 2", "completion": " 4"}]
    assert tokenized(completions, tokenizer, train_on_prompt=False) == completions  # TRL masks the prompt
    assert loss_phrase(completions, train_on_prompt=False) == "the loss over the completions"


def test_the_plan_field_takes_booleans_only():
    plan = {"model": "builtin/tiny-qwen3", "dataset": "ds-x"}
    assert parse_plan(plan)["hyperparameters"]["trainOnPrompt"] is False
    assert parse_plan({**plan, "hyperparameters": {"trainOnPrompt": True}})["hyperparameters"]["trainOnPrompt"] is True
    for wrong in ("true", 1, None):
        with pytest.raises(ValidationFailed) as refused:
            parse_plan({**plan, "hyperparameters": {"trainOnPrompt": wrong}})
        assert "hyperparameters.trainOnPrompt" in str(refused.value.message)


def test_masked_tokens_add_nothing_and_sft_loss_is_the_evaluations_loss(model_and_tokenizer, spec, tmp_path):
    """SFT's loss over chat rows (its validation pass: TRL's collator, the labels built from the
    masks) is the mean NLL of the assistant tokens, which is what an evaluation's loss is too."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model, tokenizer = model_and_tokenizer
    rows = [json.loads(line) for line in SAMPLE.read_text().splitlines()[:12]]
    prepared = tokenized(rows, tokenizer, train_on_prompt=False)
    trainer = SFTTrainer(model=model, processing_class=tokenizer, train_dataset=Dataset.from_list(prepared),
                         args=SFTConfig(output_dir=str(tmp_path), per_device_eval_batch_size=len(rows),
                                        report_to=[], use_cpu=True, max_length=512, prediction_loss_only=True))
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(len(rows))])
    for i, row in enumerate(prepared):
        labels = batch["labels"][i][: len(row["input_ids"])].tolist()
        assert labels == [t if m else -100 for t, m in zip(row["input_ids"], row["assistant_masks"])]

    # the tokens the loss counts are the assistant tokens, no more: those an evaluation scores
    counted = int((batch["labels"][:, 1:] != -100).sum())
    assert counted == sum(sum(r["assistant_masks"]) for r in prepared)
    sft_loss = trainer.evaluate(Dataset.from_list(prepared))["eval_loss"]
    evaluation = score(Generator(model, tokenizer, spec), "base-test", rows, max_tokens=1).metrics
    assert evaluation["targetTokens"] == counted
    assert sft_loss == pytest.approx(evaluation["loss"], rel=1e-4)
