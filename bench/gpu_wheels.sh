#!/usr/bin/env bash
# Downloads into .whl/ (ignored by git) the wheels bench/gpu_check.py needs on the H200 machine that
# its image lacks, for its Python 3.12, one version of each; bench/gpu_run.sh installs them there.
#
#   bash bench/gpu_wheels.sh          # here, with PyPI reachable; then carry [".whl"] in the device call
#
# The image has torch 2.11, transformers 5.17, accelerate 1.15, tokenizers 0.23.2, safetensors 0.8,
# huggingface-hub 1.33, pyarrow, pandas, xxhash, fsspec, werkzeug, jinja2, click, requests
# (/work/.library/device/KINDS.md), and no trl, datasets, marshmallow, structlog or flask. This
# project's pins (pyproject.toml) come along instead of making the code work on transformers 5.17:
# the check then runs the versions CI tests. Each wheel is pure Python; 16 MB in all.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${GPU_WHEELS_DIR:-$ROOT/.whl}"
PYTHON="${PYTHON:-python3}"

WHEELS=(
  transformers==5.23.0  # pyproject's pin (the image has 5.17)
  peft==0.21.2          # pyproject's pin (the image's version is not recorded)
  trl==1.16.0           # pyproject's pin; absent there
  datasets==5.2.0       # pyproject's pin; absent there (TRL and the engines build their datasets with it)
  dill==0.4.1           # datasets' (< 0.4.2)
  multiprocess==0.70.19 # datasets' (< 0.70.20); a wheel per Python version: this one is py312's
  marshmallow==4.4.0    # pyproject's pin: shared/plans.py, which every engine reads its plan through
  structlog==26.1.0     # shared/process/logs.py: the serving process's log lines
  flask==3.1.3          # pyproject's pin: the built-in serving process (rollouts, the endpoint check)
  itsdangerous==2.2.0   # flask's
  blinker==1.9.0        # flask's
  werkzeug==3.1.9       # flask 3.1 needs >= 3.1; the image's version is not recorded
)

rm -rf "$DEST"
mkdir -p "$DEST"
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$DEST" "${WHEELS[@]}"

# One file per name, exactly the versions above: two versions of one name stop the whole install there.
count=$(ls "$DEST"/*.whl | wc -l)
if [ "$count" -ne "${#WHEELS[@]}" ]; then
  echo "gpu_wheels: expected ${#WHEELS[@]} wheels in $DEST, found $count" >&2
  exit 1
fi
for spec in "${WHEELS[@]}"; do
  name="${spec%%==*}" version="${spec##*==}"
  if ! ls "$DEST" | grep -qiE "^${name//-/_}-${version}-"; then
    echo "gpu_wheels: no wheel of $spec in $DEST" >&2
    exit 1
  fi
done
ls -1 "$DEST"
echo "gpu_wheels: ${#WHEELS[@]} wheels, $(du -cb "$DEST"/*.whl | tail -1 | cut -f1) bytes in all ($(du -ch "$DEST"/*.whl | tail -1 | cut -f1)) in $DEST"
