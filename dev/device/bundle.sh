#!/usr/bin/env bash
# Prepare the GPU checks (dev/device/gpu_check.sh) on a machine with network and the
# project's environment, then (with --dry-run) run the whole chain here on CPU.
#
#   bash dev/device/bundle.sh [--corpus-cache DIR | --lines N] [--keep-corpus] [--dry-run]
#
# Writes, under the git-ignored .gpu/ (dev/device/bundle.py says what and why):
#   .gpu/call1/wheels + corpus.npz.xz   .gpu/call2/wheels   .gpu/call3/wheels   .gpu/bundle.json
# and prints each call's size (the working tree as the device tool sends it + its carry; at most
# 64 MiB) and the three device commands. --corpus-cache DIR: slice a pretraining run's tokenised
# corpus (OUTPUT/corpus), else tokenise N lines per file (spaCy) of en_elmo_small's [corpus].
# --keep-corpus: keep an existing .gpu/call1/corpus.npz.xz (it takes minutes to compress).
#
# --dry-run: the tree as it would travel (tracked + untracked-not-ignored files) into a scratch
# folder with the carried folders, wheels of the same pins for this Python, a fresh venv that
# sees only the packages the GPU image has (dev/device/image_packages.txt, linked from this
# environment) and installs the rest offline (pip --no-index), the three calls with
# gpu_check.sh --dry-run, then the model parts joined and loaded bit-identically. Last line:
#   dry run ok: bundle N MiB, M files back, K MiB back
# (N: the largest call's carry with the tree; M, K: the most files and MiB one call returns).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python}
CORPUS=(--lines 200000)
KEEP=0
DRY=0
while [ $# -gt 0 ]; do
    case $1 in
        --corpus-cache) CORPUS=(--corpus-cache "$2"); shift ;;
        --lines) CORPUS=(--lines "$2"); shift ;;
        --keep-corpus) KEEP=1 ;;
        --dry-run) DRY=1 ;;
        *) echo "error: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
    esac
    shift
done
timed() {  # timed LABEL COMMAND...: run, then print how long it took
    local label=$1 t0=$SECONDS
    shift
    "$@"
    echo "[bundle] $label: $((SECONDS - t0)) s"
}

timed "wheels (Python 3.12, manylinux x86-64)" "$PY" dev/device/bundle.py wheels .gpu --python-version 3.12
if [ "$KEEP" = 1 ] && [ -f .gpu/call1/corpus.npz.xz ]; then
    echo "[bundle] corpus: kept .gpu/call1/corpus.npz.xz"
else
    timed "corpus" "$PY" dev/device/bundle.py corpus .gpu/call1/corpus.npz.xz "${CORPUS[@]}"
fi
"$PY" dev/device/bundle.py sizes --json .gpu/bundle.json
cat <<'EOF'
[bundle] device commands (one after the other, each at once after the last: .gpu/site stays while the machine is warm):
  run(carry=[".gpu/call1"], timeout_s=460, command="bash dev/device/gpu_check.sh 1 540")
  run(carry=[".gpu/call2"], timeout_s=170, command="bash dev/device/gpu_check.sh 2 540")
  run(carry=[".gpu/call3"], timeout_s=150, command="bash dev/device/gpu_check.sh 3 540")
EOF
[ "$DRY" = 1 ] || exit 0

# ---- the dry run -------------------------------------------------------------------------
DIR=${DRY_RUN_DIR:-/tmp/spacy-elmo-dry-run}
VERSION=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
rm -rf "$DIR"
mkdir -p "$DIR/tree/.gpu" "$DIR/out"
git ls-files -z --cached --others --exclude-standard | \
    "$PY" -c 'import os, sys; sys.stdout.write("".join(p + "\0" for p in sys.stdin.read().split("\0") if p and os.path.isfile(p)))' | \
    tar --null -T - -cf - | tar -xf - -C "$DIR/tree"
for call in call1 call2 call3; do
    mkdir -p "$DIR/tree/.gpu/$call"
done
cp .gpu/call1/corpus.npz.xz "$DIR/tree/.gpu/call1/"
timed "dry run: wheels of the same pins for Python $VERSION" \
    "$PY" dev/device/bundle.py wheels "$DIR/tree/.gpu" --python-version "$VERSION" >/dev/null
timed "dry run: fresh venv" "$PY" -m venv "$DIR/venv"
"$PY" dev/device/bundle.py image-site "$DIR/image-site"
"$DIR/venv/bin/python" -c 'import site, sys; open(site.getsitepackages()[0] + "/gpu_image.pth", "w").write(sys.argv[1] + "\n")' \
    "$DIR/image-site"
if "$DIR/venv/bin/python" -c 'import spacy' 2>/dev/null; then
    echo "error: the fresh venv imports spaCy before any install: not a stand-in for the GPU image" >&2
    exit 1
fi
for call in 1 2 3; do
    (cd "$DIR/tree" && PATH="$DIR/venv/bin:$PATH" PYTHON="$DIR/venv/bin/python" OUT="$DIR/out/call$call" \
        timed "dry run: call $call" bash dev/device/gpu_check.sh "$call" 540 --dry-run)
done
timed "dry run: join the model parts" "$PY" dev/device/parts.py verify "$DIR/out/call1/model.manifest.json" \
    "$DIR/tree/.gpu/work/call1/run/model" "$DIR/verify"
"$PY" - "$DIR/out" <<'PY'
import json, sys
from pathlib import Path

sizes = json.loads(Path(".gpu/bundle.json").read_text())
failed = []
files = mib = 0
for call in ("call1", "call2", "call3"):
    out = Path(sys.argv[1]) / call
    report = json.loads((out / "report.json").read_text())
    failed += [f"{call} {s['name']}" for s in report["steps"] if not s["ok"]]
    back = [p for p in out.iterdir() if p.is_file()]
    files, mib = max(files, len(back)), max(mib, sum(p.stat().st_size for p in back) / 2 ** 20)
    print(f"[bundle] dry run {call}: {len(back)} files back ({', '.join(sorted(p.name for p in back))}), "
          f"{sum(p.stat().st_size for p in back) / 2 ** 20:.1f} MiB; steps {[s['name'] for s in report['steps']]}")
if failed or not all(c["fits"] for c in sizes["calls"].values()) or files > 8:
    sys.exit(f"dry run FAILED: steps {failed}, sizes {sizes['calls']}, {files} files")
print(f"dry run ok: bundle {sizes['largest_mib']:.1f} MiB, {files} files back, {mib:.1f} MiB back")
PY
