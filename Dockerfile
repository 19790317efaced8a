# One image for every service of the trainer. This is the CPU image; a GPU node's image installs
# the CUDA build of torch 2.13.0 and the `gpu` extra (vllm) instead.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY shared shared
COPY services services
COPY training_cli training_cli
RUN pip install --no-cache-dir torch==2.13.0 && pip install --no-cache-dir -e ".[ops]"
