#!/usr/bin/env bash
# Checkpoints stay layout-free under pipeline parallelism: every stage sends
# its full tensors to rank 0, which writes today's format; each stage loads
# its own layers from a full checkpoint. On a model with a tied embedding
# (held by the first and last stage), each resume follows the uninterrupted
# 1-process trajectory within 1e-5:
#   - saved under PP=2, resumed by 1 process;
#   - saved under TP=2 x PP=2 (4 ranks), resumed by 1 process;
#   - saved by 1 process, resumed under TP=2 x PP=2.
set -euo pipefail
# The resumes change --train-iters (Megatron's weight-decay steps), so they take
# the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 1 --lr-decay-iters 12)
after6() { grep -E '"iteration":([7-9]|1[0-2])[,}]' "$1"; }

"$kiln" train "${common[@]}" --train-iters 12 --metrics-file "$tmp/one.jsonl" >/dev/null
after6 "$tmp/one.jsonl" >"$tmp/one_after6.jsonl"

mpi 2 "$kiln" train "${common[@]}" --train-iters 6 --pipeline-model-parallel-size 2 --save "$tmp/pp2" >/dev/null
test "$(cat "$tmp/pp2/latest_checkpointed_iteration.txt")" = 6
"$kiln" train "${common[@]}" --train-iters 12 --load "$tmp/pp2" --override-opt_param-scheduler --metrics-file "$tmp/from_pp2.jsonl" >/dev/null
same_trajectory "$tmp/one_after6.jsonl" "$tmp/from_pp2.jsonl" 6 "saved under PP=2, resumed by 1 process"

mpi 4 "$kiln" train "${common[@]}" --train-iters 6 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2 \
  --save "$tmp/tp2pp2" >/dev/null
"$kiln" train "${common[@]}" --train-iters 12 --load "$tmp/tp2pp2" --override-opt_param-scheduler --metrics-file "$tmp/from_tp2pp2.jsonl" >/dev/null
same_trajectory "$tmp/one_after6.jsonl" "$tmp/from_tp2pp2.jsonl" 6 "saved under TP=2 x PP=2, resumed by 1 process"

"$kiln" train "${common[@]}" --train-iters 6 --save "$tmp/one" >/dev/null
mpi 4 "$kiln" train "${common[@]}" --train-iters 12 --pipeline-model-parallel-size 2 --tensor-model-parallel-size 2 \
  --load "$tmp/one" --override-opt_param-scheduler --metrics-file "$tmp/to_tp2pp2.jsonl" >/dev/null
same_trajectory "$tmp/one_after6.jsonl" "$tmp/to_tp2pp2.jsonl" 6 "saved by 1 process, resumed under TP=2 x PP=2"
