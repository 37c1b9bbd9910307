#!/usr/bin/env bash
# Operations tool: it SIGNALS OTHER PROCESSES. Run a command with the background pretraining job
# paused (SIGSTOP), and ALWAYS resume it (SIGCONT) afterwards, even if the command fails or is
# interrupted. Timing numbers on a shared 2-core machine are meaningless while pretraining runs.
#   usage: bash dev/ops/pause_pretraining.sh CMD [ARGS...]
# Only python processes whose command line matches spacy_elmo...pretrain are signalled (by pid).
set -u
PATTERN='^[^ ]*python[^ ]* .*spacy_elmo.*pretrain'
PIDS=$(pgrep -f "$PATTERN" || true)
resume() {
    if [ -n "$PIDS" ]; then
        kill -CONT $PIDS 2>/dev/null || true
        echo "pause_pretraining.sh: resumed pretraining pid(s) $PIDS" >&2
    fi
}
trap resume EXIT
trap 'exit 130' INT TERM HUP
if [ -n "$PIDS" ]; then
    kill -STOP $PIDS
    echo "pause_pretraining.sh: paused pretraining pid(s) $PIDS" >&2
    sleep 1
fi
"$@"
