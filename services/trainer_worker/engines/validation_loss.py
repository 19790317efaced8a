"""A validation pass's loss, token-weighted (issue 30): the summed negative log-likelihood of every
target token of the validation rows over their count, which is an evaluation's `loss` over the same
rows (engines/evaluate.py) and what a user compares with TRL's `eval_loss` on one batch.

The HF Trainer's own `eval_loss` is the mean of each micro-batch's token mean, weighted by the
rows in it: rows of uneven length make it another number (measured on the tiny model, 32 rows in
micro-batches of 8: 5.30522 against an evaluation's 5.30651). `token_weighted_validation(cls)`
keeps everything else of the trainer class (the Trainer's loop, its sampler, DDP and FSDP) and
changes two things in evaluation only:

- `prediction_step` runs the forward TRL's SFTTrainer runs (its fused LM head: per-token log
  probabilities and the label mask, no full logits) and keeps each row's summed NLL and target
  count, gathered from every rank the way the Trainer gathers its losses (`gather_for_metrics`, so
  the rows a distributed sampler repeats to even out the ranks count once);
- `evaluation_loop` replaces `eval_loss` with their quotient.
"""

from __future__ import annotations


def token_weighted_validation(trainer_class):
    """`trainer_class` (an SFTTrainer, or its sharded subclass) whose eval loss is token-weighted."""

    class TokenWeightedValidation(trainer_class):
        def evaluation_loop(self, dataloader, description, prediction_loss_only=None, ignore_keys=None,
                            metric_key_prefix="eval"):
            self._validation_totals = [0.0, 0]  # summed NLL, target tokens, over every rank's rows
            output = super().evaluation_loop(dataloader, description, prediction_loss_only, ignore_keys,
                                             metric_key_prefix)
            nll, tokens = self._validation_totals
            if tokens:
                output.metrics[f"{metric_key_prefix}_loss"] = nll / tokens
            return output

        def prediction_step(self, model, inputs, prediction_loss_only, ignore_keys=None):
            import torch

            inputs = self._prepare_inputs(inputs)
            with torch.no_grad(), self.compute_loss_context_manager():
                outputs = model(**inputs, fused_lm_head=True)
            row_nll = -(outputs.log_probs.float() * outputs.label_mask).sum(dim=-1)
            row_tokens = outputs.label_mask.sum(dim=-1)
            nll, tokens = self.accelerator.gather_for_metrics((row_nll, row_tokens))
            self._validation_totals[0] += float(nll.sum())
            self._validation_totals[1] += int(tokens.sum())
            # the Trainer's own per-batch loss (its mean is replaced in evaluation_loop)
            return row_nll.sum() / row_tokens.sum().clamp(min=1), None, None

    TokenWeightedValidation.__name__ = trainer_class.__name__
    return TokenWeightedValidation
