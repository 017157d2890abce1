#!/usr/bin/env bash
# `make demo`: the embedded cluster running two real distributed training jobs on this machine.
#
# It starts caldera with two virtual nodes of two (virtual) GPUs each, submits a 3-worker
# PyTorch DDP job (Arena style) and the PaddlePaddle CTR parameter-server job (a Volcano
# manifest), shows them running, streams the master's log, waits for both and prints
# their results. Every command is printed before it runs: they are what you would type.
set -euo pipefail
cd "$(dirname "$0")/.."
export CALDERA_HOME="${CALDERA_HOME:-$PWD/.caldera-demo}"
caldera="${CALDERA:-$PWD/.venv/bin/caldera}"
run() { printf '\n\033[1m$ caldera %s\033[0m\n' "$*"; "$caldera" "$@"; }

"$caldera" down >/dev/null 2>&1 || true
rm -rf "$CALDERA_HOME"
trap '"$caldera" down >/dev/null 2>&1 || true' EXIT

run up --nodes 2 --gpus-per-node 2
run submit pytorch --name ddp --workers 3 --gpus 1 --cpu 500m --memory 1Gi \
    -- python examples/pytorch-ddp/train.py --epochs 20 --output "$CALDERA_HOME/ddp-result.json"
run apply -f examples/paddle-ps-ctr/ctr-volcano.yaml
run wait ddp --for Running --timeout 120
run top node
run top job
run logs ddp -f
run wait ddp --timeout 300
run wait ctr-volcano --timeout 300
run list
run logs ctr-volcano -i trainer-0 -t 2
run logs ctr-volcano -i trainer-1 -t 2
printf '\nDDP result: %s\n' "$(cat "$CALDERA_HOME/ddp-result.json")"
run down
