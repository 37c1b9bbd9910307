#!/usr/bin/env bash
# Moved: the pause/resume wrapper is an operations tool and lives at scripts/ops/pause_pretraining.sh.
# This stub forwards to it so that commands written with the old path keep working.
exec bash "$(dirname "$0")/../scripts/ops/pause_pretraining.sh" "$@"
