#!/usr/bin/env bash
# One bounded pretraining stint on a GPU machine, for a run that then resumes on CPU.
#
#   bash scripts/gpu_pretrain_stint.sh RUN_DIR [MINUTES] [DEVICE]
#
# RUN_DIR: a pretraining output directory with checkpoint.pt, config.cfg and its corpus/ cache
# (the corpus cache lets the GPU machine train without ../shared). MINUTES: wall-clock minutes of
# training (default 8: a device session allows 9). DEVICE: default cuda.
# What it does: checks the device, installs the package if needed, resumes RUN_DIR on the device
# with bfloat16 products, stops after MINUTES as an interruption does (checkpoint + model/ written,
# loadable on CPU), and copies checkpoint.pt, model/ and the log to $OUT when $OUT is set (the
# device tool's output folder). Back on CPU:
#   python -m spacy_elmo pretrain RUN_DIR --resume --training.device cpu
# Tested on CPU with DEVICE=cpu (tests/test_pretrain_lstm.py covers the same stop and resume).
set -euo pipefail
RUN=${1:?usage: gpu_pretrain_stint.sh RUN_DIR [MINUTES] [DEVICE]}
MINUTES=${2:-8}
DEVICE=${3:-cuda}
[ -f "$RUN/checkpoint.pt" ] || { echo "error: no checkpoint at $RUN/checkpoint.pt" >&2; exit 2; }
python -c "import spacy_elmo" 2>/dev/null || pip install -q -e .
python - "$DEVICE" <<'PY'
import sys, torch
device = sys.argv[1]
if device.startswith("cuda") and not torch.cuda.is_available():
    sys.exit(f"error: {device} requested but torch {torch.__version__} sees no CUDA device")
print("device:", torch.cuda.get_device_name(device) if device.startswith("cuda") else "cpu", flush=True)
PY
python -m spacy_elmo pretrain "$RUN" --resume --quiet --training.device "$DEVICE" \
    --training.stop_after_minutes "$MINUTES" --training.threads "$(nproc)" 2>&1 | tee "$RUN/gpu_stint.log"
if [ -n "${OUT:-}" ]; then
    cp -r "$RUN/checkpoint.pt" "$RUN/model" "$RUN/gpu_stint.log" "$OUT/"
fi
