#!/usr/bin/env bash
# Dropout under data and tensor parallelism (issue 15): the masks are a
# function of the sample and the element in the single-process layout
# (trainer/model/dropout_keys.h), so DP=2 and TP=2 runs with Megatron's
# default dropout follow one process within 1e-5 relative. Hidden dropout
# is the same on every tensor-parallel rank (replicated tensors), attention
# dropout differs per rank (each draws the masks of its own heads).
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --train-iters 10 --log-interval 1 --eval-iters 0 --num-threads 1
        --hidden-dropout 0.1 --attention-dropout 0.1)
"$kiln" train "${common[@]}" --metrics-file "$tmp/one.jsonl" >/dev/null 2>&1
mpi 2 "$kiln" train "${common[@]}" --metrics-file "$tmp/dp.jsonl" >/dev/null 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/dp.jsonl" 10 "dropout, DP=2 vs 1 process"
mpi 2 "$kiln" train "${common[@]}" --tensor-model-parallel-size 2 --metrics-file "$tmp/tp.jsonl" >/dev/null 2>&1
same_trajectory "$tmp/one.jsonl" "$tmp/tp.jsonl" 10 "dropout, TP=2 vs 1 process"
"$kiln" train "${common[@]}" --hidden-dropout 0 --attention-dropout 0 --metrics-file "$tmp/off.jsonl" >/dev/null 2>&1
if same_trajectory "$tmp/one.jsonl" "$tmp/off.jsonl" 10 "dropout vs none (must differ)" >/dev/null; then
  echo "FAIL: dropout changed nothing"; exit 1
fi
