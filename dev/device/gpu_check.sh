#!/usr/bin/env bash
# The GPU checks, on a machine with a CUDA device, torch and numpy but no network and no spaCy,
# from the repository root with what dev/device/bundle.sh carried under .gpu/:
#
#   bash dev/device/gpu_check.sh CALL [TOTAL_SECONDS] [--dry-run]
#
# CALL 1: install the biLM + trainer wheels; the torch-only GPU tests (tests/test_gpu_bilm.py,
#         tests/test_gpu_allennlp.py); a pretraining stint on the pre-tokenised corpus
#         (dev/device/stint.cfg: warm start from en_elmo_small, the training path a user gets
#         with --training.device cuda); the trained model back as float16 parts
#         (dev/device/parts.py).
# CALL 2: install the spaCy stack but spaCy itself; biLM inference tokens/s (float32, bfloat16)
#         and parity with CPU for en_elmo_small and a random original-size biLM.
# CALL 3: install spaCy beside call 2's packages (made just before: the machine keeps .gpu/site
#         while it is warm); the spaCy GPU tests (tests/test_gpu_pipeline.py).
# TOTAL_SECONDS (default 540) is the time of all three calls; this call takes its share
# (64 / 20 / 16 %). Every step prints its time; a failed or timed-out step is recorded and the
# next one runs; the last step writes report.json, report.md and logs.txt (dev/device/report.py)
# into $OUT (default .gpu/out/callN), with the model parts after call 1: at most 8 files.
# --dry-run: on CPU (DEVICE=cpu), a 1-minute stint on 1 thread, few inference sentences, and
# the stint stops on time (no final held-out evaluation).
set -u
cd "$(dirname "$0")/../.." || exit 2
CALL=${1:?usage: gpu_check.sh CALL [TOTAL_SECONDS] [--dry-run]}
TOTAL=540
DRY=0
for arg in "${@:2}"; do
    case $arg in
        --dry-run) DRY=1 ;;
        *[!0-9]*) echo "error: TOTAL_SECONDS must be a whole number, got '$arg'" >&2; exit 2 ;;
        *) TOTAL=$arg ;;
    esac
done
case $CALL in
    1) SHARE=64 ;; 2) SHARE=20 ;; 3) SHARE=16 ;;
    *) echo "error: CALL must be 1, 2 or 3, got '$CALL'" >&2; exit 2 ;;
esac
BUDGET=$((TOTAL * SHARE / 100))
START=$(date +%s)
PY=${PYTHON:-python3}
export PYTHON=$PY
DEVICE=${DEVICE:-cuda}
THREADS=$(nproc)
if [ "$DRY" = 1 ]; then DEVICE=cpu; THREADS=1; fi
export OMP_NUM_THREADS=$THREADS SPACY_ELMO_THREADS=$THREADS PYTHONUNBUFFERED=1
GPU_DIR=${GPU_DIR:-$PWD/.gpu}  # what bundle.sh wrote (the tests point it elsewhere)
CARRY=$GPU_DIR/call$CALL
SITE=$GPU_DIR/site
WORK=$GPU_DIR/work/call$CALL
STEPS=$WORK/steps
OUT=${OUT:-$GPU_DIR/out/call$CALL}
rm -rf "$WORK"
mkdir -p "$STEPS" "$OUT" "$SITE"
export PYTHONPATH=$SITE:$PWD

left() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME LIMIT_SECONDS COMMAND...: run with a time limit, log to $STEPS/NAME.log, record
# exit status and seconds in $STEPS/NAME.status.json; never stops the script.
step() {
    local name=$1 limit=$2 t0 rc secs timed_out=false
    shift 2
    [ "$limit" -lt 5 ] && limit=5
    echo "[gpu_check] call $CALL, $name: start (limit ${limit} s)"
    t0=$(date +%s.%N)
    timeout --kill-after=10 "$limit" "$@" >"$STEPS/$name.log" 2>&1
    rc=$?
    secs=$(awk "BEGIN {printf \"%.1f\", $(date +%s.%N) - $t0}")
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then timed_out=true; fi
    printf '{"name": "%s", "rc": %d, "seconds": %s, "limit": %d, "timed_out": %s}\n' \
        "$name" "$rc" "$secs" "$limit" "$timed_out" >"$STEPS/$name.status.json"
    if [ $rc -eq 0 ]; then
        echo "[gpu_check] call $CALL, $name: ok in $secs s"
    else
        echo "[gpu_check] call $CALL, $name: FAILED (exit $rc, timed out: $timed_out) in $secs s; log tail:"
        tail -n 5 "$STEPS/$name.log" | sed 's/^/    /'
    fi
    return 0
}

step env 30 "$PY" dev/device/steps.py env "$STEPS/env.json"
case $CALL in
1)
    step install 90 bash dev/device/install_wheels.sh "$CARRY" "$SITE" h5py confection torch numpy
    step tests_bilm 150 "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_bilm.py tests/test_gpu_allennlp.py --junitxml "$STEPS/tests_bilm.xml"
    STINT=$(($(left) - 40))
    EXTRA=()
    if [ "$DRY" = 1 ]; then STINT=60; EXTRA=(--no-final-eval --probe-steps 2 --tokens-per-batch 2000); fi
    step stint $((STINT + 150)) "$PY" dev/device/steps.py stint "$STEPS/stint.json" --pack "$CARRY/corpus.npz.xz" \
        --run "$WORK/run" --config dev/device/stint.cfg --device "$DEVICE" --seconds "$STINT" \
        --threads "$THREADS" "${EXTRA[@]}"
    step parts 60 "$PY" dev/device/parts.py split "$WORK/run/model" "$OUT" --max-mib 16 --max-files 5
    ;;
2)
    step install 90 bash dev/device/install_wheels.sh "$CARRY" "$SITE" h5py confection thinc blis srsly
    SMALL=()
    [ "$DRY" = 1 ] && SMALL=(--small)
    step infer $(($(left) - 15)) "$PY" dev/device/steps.py infer "$STEPS/infer.json" --device "$DEVICE" \
        --seconds $(($(left) - 45)) "${SMALL[@]}"
    ;;
3)
    step install 90 bash dev/device/install_wheels.sh "$CARRY" "$SITE" spacy thinc h5py
    step tests_pipeline $(($(left) - 10)) "$PY" -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_pipeline.py \
        --junitxml "$STEPS/tests_pipeline.xml"
    ;;
esac
"$PY" dev/device/report.py "$STEPS" "$OUT" "$CALL"
echo "[gpu_check] call $CALL done in $(($(date +%s) - START)) s of $BUDGET s; back in $OUT: $(ls "$OUT" | tr '\n' ' ')"
