#!/usr/bin/env bash
# FP8 training (docs/MIXED_PRECISION.md, "FP8") across layouts, on the
# Llama-style model in bf16 with --fp8-format hybrid and delayed scaling:
#   - DP=2 (one micro-batch a rank) gives one process's losses (two
#     micro-batches) exactly: both reduce the two micro-batches' amaxes to
#     one per tensor before the scales update;
#   - TP=2 and PP=2 follow one process: the amaxes are reduced over the
#     tensor-parallel shards of each weight, and each stage keeps its own
#     layers' scales;
#   - a PP=2 checkpoint holds every stage's FP8 state (gathered to rank 0):
#     PP=2 and one process both resume from it as the straight runs go on.
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --lr 1e-2 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 1
        --hidden-dropout 0 --attention-dropout 0 --bf16 "${llama[@]}"
        --fp8-format hybrid --fp8-amax-history-len 4 --fp8-amax-compute-algo max)
train() {  # RANKS NAME ARGS...
  local n=$1 name=$2; shift 2
  local run=("$kiln" train "${common[@]}" --metrics-file "$tmp/$name.jsonl" "$@")
  if [ "$n" = 1 ]; then "${run[@]}" >"$tmp/$name.log" 2>&1; else mpi "$n" "${run[@]}" >"$tmp/$name.log" 2>&1; fi ||
    { echo "FAIL: $name:"; tail -5 "$tmp/$name.log"; exit 1; }
}
train 1 one --train-iters 10 --save "$tmp/c_one" --save-interval 5
train 2 dp2 --train-iters 10
train 2 tp2 --train-iters 10 --tensor-model-parallel-size 2
train 2 pp2 --train-iters 10 --pipeline-model-parallel-size 2 --save "$tmp/c_pp" --save-interval 5
same_trajectory "$tmp/one.jsonl" "$tmp/dp2.jsonl" 10 "FP8 DP=2 vs 1 process" 1e-12
same_trajectory "$tmp/one.jsonl" "$tmp/tp2.jsonl" 10 "FP8 TP=2 vs 1 process" 2e-3
same_trajectory "$tmp/one.jsonl" "$tmp/pp2.jsonl" 10 "FP8 PP=2 vs 1 process" 1e-12
# Every stage's scales in rank 0's checkpoint: PP=2 resumed at 5 gives the straight PP=2 run's steps 6-10.
echo 5 >"$tmp/c_pp/latest_checkpointed_iteration.txt" && rm -rf "$tmp/c_pp/iter_0000010"
train 2 pp2_resumed --train-iters 10 --pipeline-model-parallel-size 2 --load "$tmp/c_pp"
tail -5 "$tmp/pp2.jsonl" >"$tmp/pp2_tail.jsonl"
same_trajectory "$tmp/pp2_tail.jsonl" "$tmp/pp2_resumed.jsonl" 5 "FP8 PP=2 resumed at 5" 1e-12
# ... and so does one process (the same checkpoint's state, in another layout).
train 1 one_from_pp --train-iters 10 --load "$tmp/c_pp"
tail -5 "$tmp/one.jsonl" >"$tmp/one_tail.jsonl"
same_trajectory "$tmp/one_tail.jsonl" "$tmp/one_from_pp.jsonl" 5 "FP8 1 process resumed from PP=2's checkpoint" 1e-12
