#!/usr/bin/env bash
# install_wheels.sh CARRY SITE MODULE...: install CARRY/wheels/*.whl offline into SITE
# (pip --no-index --no-deps --target; packages already there from an earlier call stay), then
# import each MODULE (from SITE and the machine's own packages) and print its version.
set -u
CARRY=$1 SITE=$2
shift 2
PY=${PYTHON:-python3}
wheels=("$CARRY"/wheels/*.whl)
[ -e "${wheels[0]}" ] || { echo "no wheels in $CARRY/wheels: run dev/device/bundle.sh first"; exit 2; }
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${wheels[@]}" \
    || exit 1
PYTHONPATH=$SITE:${PYTHONPATH:-} "$PY" -c "import importlib, importlib.util, sys
missing = [m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]
assert not missing, f'not importable after the install: {missing} (call 3 needs call 2 made just before)'
for m in sys.argv[1:]:
    print(m, getattr(importlib.import_module(m), '__version__', '(no __version__)'))" "$@"
