#!/usr/bin/env bash
# `make demo`: the embedded cluster running two real distributed training jobs on this machine.
#
# It starts caldera with two virtual nodes of two (virtual) GPUs each, submits a 3-worker
# PyTorch DDP job (Arena style) and the PaddlePaddle CTR parameter-server job (a Volcano
# manifest), shows them running, streams the master's log, waits for both and prints
# their results. Then an elastic job (examples/elastic-ddp, 3 workers on etcd): one of its
# training processes is killed with -9, the job is scaled to 2 and back to 3 while it
# trains, and it completes with retryCount 0; the rounds are read from its logs.
# The dashboard's URL is printed first: open it to watch the jobs live.
# Every command is printed before it runs: they are what you would type.
set -euo pipefail
cd "$(dirname "$0")/.."
export CALDERA_HOME="${CALDERA_HOME:-${TMPDIR:-/tmp}/caldera-demo}"  # outside the repository: the demo writes nothing into it
caldera="${CALDERA:-$PWD/.venv/bin/caldera}"
run() { printf '\n\033[1m$ caldera %s\033[0m\n' "$*"; "$caldera" "$@"; }

"$caldera" down >/dev/null 2>&1 || true
rm -rf "$CALDERA_HOME"
trap '"$caldera" down >/dev/null 2>&1 || true' EXIT

run up --nodes 2 --gpus-per-node 2
run dashboard --no-open   # the web dashboard: open it to watch what follows (log in with the token it names)
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

# Elastic training: wait for a log line, kill a worker's training process, scale.
await() {  # await FILE REGEX: until a line of FILE matches (at most 180 s)
    for _ in $(seq 1800); do grep -qE "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
    echo "timed out waiting for /$2/ in $1" >&2; return 1
}
log1="$CALDERA_HOME/pods/default/elastic-worker-1/log"
run submit pytorch --name elastic --elastic --workers 2:3 --cpu 300m \
    -- python examples/elastic-ddp/train.py --epochs 14 --step-delay 0.02 --checkpoint "$CALDERA_HOME/elastic-ckpt"
await "$log1" '^epoch=3 '
pid=$(grep -oE 'pids=[0-9]+ start$' "$log1" | tail -1 | grep -oE '[0-9]+')
printf '\n\033[1m$ kill -9 %s\033[0m   # the training process of elastic-worker-1\n' "$pid"
kill -9 "$pid"
await "$log1" '^start world=3 .* restart=1'
run scale elastic --replicas 2
await "$CALDERA_HOME/pods/default/elastic-worker-0/log" '^start world=2 '
run scale elastic --replicas 3
run wait elastic --timeout 300
printf '\n\033[1m$ grep -h "^start" .../elastic-worker-0/log\033[0m   # every round: world size, restart, resumed epoch\n'
grep -h '^start' "$CALDERA_HOME/pods/default/elastic-worker-0/log"
run get elastic
run down
