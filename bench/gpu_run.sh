#!/usr/bin/env bash
# Runs one command on the GPU machine and keeps all of its output:
#
#   bash bench/gpu_run.sh NAME CMD...        e.g. bash bench/gpu_run.sh gpu-check python bench/gpu_check.py
#
# 1. installs the wheels bench/gpu_wheels.sh put in .whl/ (when there are any) into /tmp/site, as
#    the device README says (once: a second gpu_run.sh in the same call finds them there), and puts
#    /tmp/site and this repository on PYTHONPATH;
#    sets HF_HUB_OFFLINE=1 (unless set: the machine reaches nothing, so a hub call fails at once);
# 2. prints the date, the machine, `nvidia-smi` (or that it is absent), python, torch, CUDA, cuDNN
#    and the versions of transformers, peft, trl, accelerate, datasets and tokenizers, with where
#    each was imported from (/tmp/site or the image);
# 3. runs CMD with PYTHONUNBUFFERED=1; a leading `python` or `python3` is the machine's python3 (the
#    one that holds torch there; GPU_RUN_PYTHON elsewhere);
# 4. everything goes to the terminal and to ${OUT:-./gpu-out}/NAME.log (OUT is the folder the device
#    tool brings back), and the script exits with CMD's status (3 when the wheels did not install).
#
# Variables for running it elsewhere (the tests run it on CPU): GPU_RUN_PYTHON (python3),
# GPU_RUN_SITE (/tmp/site), GPU_RUN_WHEELS (.whl of this repository).
set -uo pipefail
if [ $# -lt 2 ]; then
  echo "usage: bash bench/gpu_run.sh NAME CMD..." >&2
  exit 2
fi
NAME="$1"
shift
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${GPU_RUN_PYTHON:-python3}"
SITE="${GPU_RUN_SITE:-/tmp/site}"
WHEELS="${GPU_RUN_WHEELS:-$ROOT/.whl}"
OUTDIR="${OUT:-$ROOT/gpu-out}"
mkdir -p "$OUTDIR"
LOG="$OUTDIR/$NAME.log"

versions() {
  "$PYTHON" - <<'PY'
import importlib, platform, sys

print(f"python {platform.python_version()} ({sys.executable})")
try:
    import torch

    cuda = torch.cuda.is_available()
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
          f"CUDA available {cuda}" + (f", {torch.cuda.get_device_name(0)} (capability "
                                      f"{'.'.join(map(str, torch.cuda.get_device_capability(0)))})" if cuda else ""))
except Exception as error:  # the versions are information: what follows still runs
    print(f"torch: {type(error).__name__}: {error}")
for name in ("transformers", "peft", "trl", "accelerate", "datasets", "tokenizers"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {module.__version__} ({module.__file__})")
    except Exception as error:
        print(f"{name}: {type(error).__name__}: {error}")
PY
}

main() {
  cd "$ROOT" || return 3
  echo "gpu_run: $NAME, $(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -srm), $(nproc) cores"
  if compgen -G "$WHEELS/*.whl" >/dev/null; then
    # the same wheels already installed there (an earlier gpu_run.sh in the same device call): kept
    local listing
    listing="$(cd "$WHEELS" && ls -l -- *.whl | awk '{print $5, $NF}')"
    if [ -f "$SITE/.gpu_run_wheels" ] && [ "$(cat "$SITE/.gpu_run_wheels")" = "$listing" ]; then
      echo "gpu_run: the $(ls "$WHEELS"/*.whl | wc -l) wheels of $WHEELS are already installed in $SITE"
    else
      echo "gpu_run: installing $(ls "$WHEELS"/*.whl | wc -l) wheels from $WHEELS into $SITE"
      if ! "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" \
          "$WHEELS"/*.whl; then
        echo "gpu_run: the wheels did not install: $NAME not run"
        return 3
      fi
      printf '%s' "$listing" >"$SITE/.gpu_run_wheels"
    fi
    export PYTHONPATH="$SITE:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
  else
    echo "gpu_run: no wheels in $WHEELS: nothing installed"
    export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
  fi
  export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}"  # nothing can be reached there: fail at once, never wait
  echo "gpu_run: PYTHONPATH=$PYTHONPATH HF_HUB_OFFLINE=$HF_HUB_OFFLINE"
  if command -v nvidia-smi >/dev/null 2>&1; then
    nvidia-smi || echo "gpu_run: nvidia-smi failed"
  else
    echo "gpu_run: nvidia-smi: absent"
  fi
  versions || echo "gpu_run: the versions could not be read"
  if [ "$1" = python ] || [ "$1" = python3 ]; then
    set -- "$PYTHON" "${@:2}"
  fi
  echo "gpu_run: running $*"
  local started=$SECONDS status
  PYTHONUNBUFFERED=1 "$@"
  status=$?
  echo "gpu_run: $NAME exited with $status after $((SECONDS - started))s; its output is in $LOG"
  return "$status"
}

main "$@" 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
