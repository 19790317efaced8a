"""Serving a model over OpenAI-compatible HTTP: used by endpoints (the endpoint manager), by GRPO
rollouts and by evaluations (the trainer worker).

- `backends.py`: how to start a serving process for a load spec (`choose_backend`: vLLM or built-in).
- `generation.py`: `Generator` and `SamplingParams`, the built-in server's generation over a loaded
  model; evaluations score with the same code, so both give the same tokens.
- `adapter_slots.py`: the Generator's adapters by served name over PEFT adapter slots (a GRPO
  hand-off copies the new adapter into the modules of the one just unloaded).
- `adapter_fold.py`: load spec adapterMode "folded" (a GRPO rollout server's): one adapter at a time
  folded into the server's copy of the base weights, exactly, so generation runs at merged speed.
- `image_inputs.py`: chat messages with images as an image-text model's inputs.
- `openai_app.py`, `server.py`: the built-in serving process (`python -m shared.serving.server`).
"""
