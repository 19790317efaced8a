"""The bare TRL script bench/platform_overhead.py compares the trainer with: what an ML engineer
would write instead, in a process of its own.

    python bench/bare_trl.py SETTINGS.json MODEL_DIR DATASET.jsonl WORK_DIR OUT.json
    python -m torch.distributed.run --nproc_per_node 2 bench/bare_trl.py ...   (2 slots, gloo)

It imports nothing of the trainer: transformers, peft, datasets and TRL only. SFT trains a
`SFTTrainer` on the prompt + completion rows (TRL masks the prompt, as it does for the trainer's
sft engine); GRPO trains a `GRPOTrainer` that generates in this process with the same generation
settings (numGenerations, maxCompletionLength, temperature) and the same `length` reward. The
TrainingArguments are the ones the trainer's engines derive from the same plan (per-device batch
= global batch / slots, fp32 without autocast, no activation checkpointing, seed, lr, no warm-up,
save at the last step only), where TRL's own defaults differ (bf16, activation checkpointing).

A callback that only reads clocks records, per optimizer step, the wall time (time.time()) and
`num_input_tokens_seen` when the Trainer logs it, exactly where the trainer's own callback takes
its tokens/s; rank 0 writes them with the script's start time to OUT.json.
"""

from __future__ import annotations

import time

STARTED_AT = time.time()  # before any import that costs: the script's own start

import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402


def _threads() -> None:
    """One CPU slot's share of the cores, as the trainer's worker gives a run (cores / node slots)."""
    import torch

    slots_of_node = int(os.environ.get("BENCH_NODE_SLOTS", "1"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // max(slots_of_node, world)))


def main(argv: list[str]) -> None:
    settings_file, model_dir, dataset_file, work_dir, out_file = argv
    s = json.loads(Path(settings_file).read_text())
    _threads()
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback

    class StepClock(TrainerCallback):
        def __init__(self):
            self.steps: list[dict] = []
            self.train_begin_at = None

        def on_train_begin(self, args, state, control, **kwargs):
            self.train_begin_at = time.time()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.steps.append({"step": state.global_step, "time": time.time(),
                                   "tokensSeen": int(state.num_input_tokens_seen)})

    world = int(os.environ.get("WORLD_SIZE", "1"))
    loaded_at = {}
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    loaded_at["model"] = time.time()
    rows = [json.loads(line) for line in Path(dataset_file).read_text().splitlines() if line.strip()]
    dataset = Dataset.from_list(rows)
    loaded_at["dataset"] = time.time()
    peft_config = LoraConfig(r=s["rank"], lora_alpha=float(s["alpha"]), lora_dropout=0.0,
                             target_modules="all-linear", task_type="CAUSAL_LM")
    common = dict(output_dir=str(Path(work_dir) / "hf"), per_device_train_batch_size=s["batch"] // world,
                  gradient_accumulation_steps=1, learning_rate=s["learningRate"], max_steps=s["steps"],
                  warmup_steps=0, seed=s["seed"], use_cpu=True,
                  # TRL's configs default to bf16 and activation checkpointing; the plan trains in
                  # fp32 and the trainer checkpoints no activations on CPU: the same computation here
                  bf16=False, fp16=False, activation_checkpointing=False,
                  logging_steps=1, save_strategy="steps",
                  save_steps=10**12, report_to="none", disable_tqdm=True, dataloader_num_workers=0,
                  ddp_backend="gloo" if world > 1 else None,
                  ddp_find_unused_parameters=False if world > 1 else None)
    clock = StepClock()
    if s["method"] == "sft":
        from trl import SFTConfig, SFTTrainer

        trainer = SFTTrainer(model=model, train_dataset=dataset, processing_class=tokenizer, peft_config=peft_config,
                             callbacks=[clock],
                             args=SFTConfig(**common, max_length=s["maxLength"], packing=False,
                                            include_num_input_tokens_seen="non_padding", completion_only_loss=True))
    else:
        from trl import GRPOConfig, GRPOTrainer

        target = s["lengthTarget"]

        def length(completions, **kwargs):
            return [-abs(len(c) - target) / target for c in completions]

        trainer = GRPOTrainer(model=model, reward_funcs=[length], train_dataset=dataset, processing_class=tokenizer,
                              peft_config=peft_config, callbacks=[clock],
                              args=GRPOConfig(**common, num_generations=s["generations"],
                                              max_completion_length=s["completionTokens"],
                                              temperature=s["temperature"], beta=0.0))
    trainer.train()
    import torch.distributed as dist

    together = dist.is_available() and dist.is_initialized()
    if together:
        dist.barrier()  # every rank done training before any leaves
    if int(os.environ.get("RANK", "0")) == 0:
        Path(out_file).write_text(json.dumps({"startedAt": STARTED_AT, "modelLoadedAt": loaded_at["model"],
                                              "datasetLoadedAt": loaded_at["dataset"],
                                              "trainBeginAt": clock.train_begin_at, "steps": clock.steps}))
    if together:
        dist.barrier()
        dist.destroy_process_group()  # without it a gloo rank can abort at teardown (NOTES.md)


if __name__ == "__main__":
    main(sys.argv[1:])
