#!/usr/bin/env bash
# The quickstart through the REST API with curl alone: upload a dataset, create an SFT run,
# poll it to the end, download its adapter.
#   TRAINING_API_URL=http://127.0.0.1:8600 TRAINING_TOKEN=... examples/curl/quickstart.sh DATASET.jsonl OUT_DIR
# (`training up` writes both values to ~/.training/cli.yaml; `training config view` shows them.)
set -euo pipefail
api="${TRAINING_API_URL:?set TRAINING_API_URL}"
auth="Authorization: Bearer ${TRAINING_TOKEN:?set TRAINING_TOKEN}"
dataset_file="${1:?usage: quickstart.sh DATASET.jsonl OUT_DIR}"
out_dir="${2:?usage: quickstart.sh DATASET.jsonl OUT_DIR}"

field() { python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

dataset=$(curl -sf -H "$auth" -F "file=@${dataset_file}" "$api/v1/datasets" | field '["id"]')
echo "dataset $dataset"

run=$(curl -sf -H "$auth" -H 'Content-Type: application/json' "$api/v1/runs" -d @- <<JSON | field '["id"]'
{"method": "sft", "model": "builtin/tiny-qwen3", "dataset": "$dataset",
 "hyperparameters": {"maxSteps": 20, "batchSize": 8, "learningRate": 0.003}}
JSON
)
echo "run $run"

while true; do
  body=$(curl -sf -H "$auth" "$api/v1/runs/$run")
  status=$(echo "$body" | field '["status"]')
  echo "status $status step $(echo "$body" | field '["progress"]["step"]')"
  case "$status" in SUCCEEDED) break ;; FAILED|CANCELLED) echo "$body"; exit 1 ;; esac
  sleep 1
done

snapshot=$(curl -sf -H "$auth" "$api/v1/runs/$run" | field '["latestSnapshot"]')
mkdir -p "$out_dir"
curl -sf -H "$auth" "$api/v1/snapshots/$snapshot/adapter" | tar -xz -C "$out_dir"
echo "adapter of snapshot $snapshot in $out_dir"
