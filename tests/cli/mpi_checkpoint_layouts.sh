#!/usr/bin/env bash
# Checkpoints hold full (unsharded) tensors, so one saved by 2 data-parallel
# ranks resumes in 1 process and one saved by 1 process resumes on 2 ranks;
# each continues the uninterrupted trajectory (within float rounding: the
# gradient sums are added in another order on 2 ranks).
set -euo pipefail
# The resumes change --train-iters (Megatron's weight-decay steps), so they take
# the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --train-iters 12 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 1)
after6() { grep -E '"iteration":([7-9]|1[0-2])[,}]' "$1"; }

"$kiln" train "${common[@]}" --metrics-file "$tmp/full.jsonl" >/dev/null
after6 "$tmp/full.jsonl" >"$tmp/full_after6.jsonl"

# Saved by DP=2, resumed by 1 process.
mpi 2 "$kiln" train "${common[@]}" --train-iters 6 --lr-decay-iters 12 --save "$tmp/dp2" >/dev/null
test "$(cat "$tmp/dp2/latest_checkpointed_iteration.txt")" = 6
"$kiln" train "${common[@]}" --load "$tmp/dp2" --override-opt_param-scheduler --metrics-file "$tmp/from_dp2.jsonl" >/dev/null
same_trajectory "$tmp/full_after6.jsonl" "$tmp/from_dp2.jsonl" 6 "saved by DP=2, resumed by 1 process"

# Saved by 1 process, resumed by DP=2.
"$kiln" train "${common[@]}" --train-iters 6 --lr-decay-iters 12 --save "$tmp/dp1" >/dev/null
mpi 2 "$kiln" train "${common[@]}" --load "$tmp/dp1" --override-opt_param-scheduler --metrics-file "$tmp/from_dp1.jsonl" >/dev/null
same_trajectory "$tmp/full_after6.jsonl" "$tmp/from_dp1.jsonl" 6 "saved by 1 process, resumed by DP=2"
