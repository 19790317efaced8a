"""The learning-rate schedule every engine trains with: linear warmup that never trains a step at
learning rate 0, then transformers' linear decay, unchanged.

transformers' "linear" schedule multiplies the learning rate of optimizer step k (1-based) by
(k - 1) / W during a warmup of W steps, so step 1 trains at 0 and is wasted (issue 29 item 4). Here
step k of the warmup trains at k / (W + 1) of the plan's learningRate, so the warmup rises
1/(W+1), 2/(W+1), ..., W/(W+1), and step W + 1 trains at the full rate. From there on it is
transformers' decay: step k trains at (T - k + 1) / (T - W) of the rate (T: the run's total
steps), down to 1/(T - W) at the last step. Without warmup (W = 0) nothing changes: step 1 trains
at the full rate. The lr each step trained at is what the run's metrics record (`learningRate`).

A training state saved under transformers' own schedule (a layout-1 snapshot, written by release
0.5) continues under that schedule, the way its parent trained (SPEC 3.3: exactly as if it had
never stopped). The two differ only inside the warmup; a snapshot such a branch writes is layout 2,
and a run resumed from one of those (a pause inside the warmup of a branch of a layout-1 snapshot
taken inside its warmup) trains its remaining warmup steps at k / (W + 1).
"""

from __future__ import annotations

from functools import partial


def warmup_then_linear(step: int, *, warmup_steps: int, total_steps: int) -> float:
    """The factor of the learning rate after `step` optimizer steps (that is, for step `step + 1`)."""
    if step < warmup_steps:
        return (step + 1) / (warmup_steps + 1)
    return max(0.0, (total_steps - step) / max(1, total_steps - warmup_steps))


def warm_up_from_the_first_step(trainer, restored=None):
    """The trainer, its "linear" schedule replaced by `warmup_then_linear` (the same LambdaLR class,
    so a saved scheduler state loads either way). Other schedule types, and a run that continues
    a layout-1 training state (`restored`: kit.RestorePlan), keep transformers' own."""
    from torch.optim.lr_scheduler import LambdaLR

    if str(getattr(trainer.args.lr_scheduler_type, "value", trainer.args.lr_scheduler_type)) != "linear":
        return trainer
    if restored is not None and restored.checkpoint is not None and restored.manifest.get("layout") == 1:
        return trainer

    def create_scheduler(num_training_steps: int, optimizer=None):
        if trainer.lr_scheduler is None:
            factor = partial(warmup_then_linear, warmup_steps=trainer.args.get_warmup_steps(num_training_steps),
                             total_steps=num_training_steps)
            trainer.lr_scheduler = LambdaLR(optimizer if optimizer is not None else trainer.optimizer, factor)
            trainer._created_lr_scheduler = True
        return trainer.lr_scheduler

    trainer.create_scheduler = create_scheduler
    return trainer
