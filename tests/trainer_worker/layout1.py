"""A generator of layout-1 snapshot directories, as release 0.5 wrote them (SPEC 3.3).

A layout-1 directory is a Hugging Face Trainer checkpoint of a PEFT model saved on one GPU
(adapter_config.json, adapter_model.safetensors or adapter_model.bin, optimizer.pt, scheduler.pt,
trainer_state.json, rng_state.pth, ...) plus a snapshot.json of
{"layout": 1, "model", "method", "step", "gpus": 1, "precision"}.

It is made by really training: TRL's SFTTrainer over a LoRA adapter, configured from the plan the
way release 0.5 did (the same optimizer, schedule, seed and batch), stopped and checkpointed at
`step` of a run planned for `maxSteps`. Nothing here imports the current engine, so a change in the
engine that breaks reading old snapshots shows up. The .bin variant is the same checkpoint with
its adapter re-saved by torch.save, as PEFT wrote it before safetensors.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def make_layout1_snapshot(model_dir: Path, dataset: Path, target: Path, *, plan: dict, step: int,
                          adapter_format: str = "safetensors") -> Path:
    """Write a layout-1 snapshot of `plan` trained to `step` into `target` (which must not exist)."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from trl import SFTConfig, SFTTrainer

    hp = plan["hyperparameters"]
    adapter = plan["adapter"]
    work = target.parent / f".{target.name}-hf"

    class StopAt(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == step:
                control.should_save = True
                control.should_training_stop = True

    rows = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    trainer = SFTTrainer(
        model=AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32, local_files_only=True),
        args=SFTConfig(
            output_dir=str(work), per_device_train_batch_size=hp["batchSize"], gradient_accumulation_steps=1,
            learning_rate=hp["learningRate"], max_steps=hp["maxSteps"], warmup_steps=hp.get("warmupSteps") or 0,
            seed=hp["seed"], max_length=hp["maxSeqLength"], use_cpu=True, logging_steps=1,
            save_strategy="steps", save_steps=10**12, report_to="none", disable_tqdm=True, packing=False,
            include_num_input_tokens_seen="non_padding",
            # SFTConfig's own defaults (bf16 mixed precision, activation checkpointing) are not what
            # a fp32 plan trained with: the plan's precision decides, as it did in release 0.5.
            bf16=plan.get("precision") == "bf16", fp16=False, activation_checkpointing=False,
        ),
        train_dataset=Dataset.from_list(rows),
        processing_class=AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True),
        peft_config=LoraConfig(r=adapter["rank"], lora_alpha=adapter["alpha"], lora_dropout=adapter["dropout"],
                               target_modules=adapter["targetModules"], task_type="CAUSAL_LM"),
        callbacks=[StopAt()],
    )
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    shutil.move(str(work / f"checkpoint-{step}"), str(target))
    shutil.rmtree(work)
    if adapter_format == "bin":
        _adapter_to_bin(target)
    elif adapter_format != "safetensors":
        raise ValueError(f"adapter_format must be safetensors or bin, not {adapter_format}")
    (target / "snapshot.json").write_text(json.dumps({
        "layout": 1, "model": plan["model"], "method": "sft", "step": step, "gpus": 1,
        "precision": plan.get("precision", "fp32"),
    }, indent=2) + "\n")
    return target


def as_bin_variant(snapshot: Path, target: Path) -> Path:
    """A copy of a layout-1 snapshot whose adapter is adapter_model.bin instead of .safetensors."""
    shutil.copytree(snapshot, target)
    _adapter_to_bin(target)
    return target


def _adapter_to_bin(directory: Path) -> None:
    import torch
    from safetensors.torch import load_file

    torch.save(load_file(directory / "adapter_model.safetensors"), directory / "adapter_model.bin")
    (directory / "adapter_model.safetensors").unlink()
