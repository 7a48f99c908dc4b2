#!/usr/bin/env bash
# Pipeline parallelism under a real mpirun (--pipeline-model-parallel-size,
# Megatron's 1F1B schedule, activations and their gradients sent between
# stages, a tied embedding's gradient summed by the first and last stage):
#   - PP=2 and PP=4 follow the 1-process loss trajectory over 12 steps within
#     1e-5, for a GPT-2-style model (tied embedding, dropout on) and a
#     Llama-style one, with 4 micro-batches per step so the schedule has
#     warm-up, steady and cool-down phases; validation losses agree too;
# (Other layouts and the refusals: mpi_pipeline_layouts.sh.)
set -euo pipefail
kiln=$1
source "$(dirname "$0")/../tools/mpi.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 4 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 8 --lr-warmup-iters 2 --log-interval 1 --eval-iters 2 --eval-interval 6
        --num-threads 1 --train-iters 12)

# Validation losses (printed by the last rank) agree within 1e-5 relative.
same_validation() {
  paste <(grep -o "lm loss value: [^ ]*" "$1" | cut -d' ' -f4) <(grep -o "lm loss value: [^ ]*" "$2" | cut -d' ' -f4) |
    awk -v what="$3" '{ d = $1 - $2; if (d < 0) d = -d; if (d / $1 > 1e-5) bad = 1; k++ }
         END { printf "%s: %d evaluations compared\n", what, k; exit bad || k != 2 }'
}

for family in gpt llama; do
  flags=("${common[@]}")
  [ "$family" = llama ] && flags+=("${llama[@]}")
  "$kiln" train "${flags[@]}" --metrics-file "$tmp/$family.jsonl" >"$tmp/$family.log"
  for pp in 2 4; do
    mpi "$pp" "$kiln" train "${flags[@]}" --pipeline-model-parallel-size "$pp" \
      --metrics-file "$tmp/$family-pp$pp.jsonl" >"$tmp/$family-pp$pp.log" 2>&1
    same_trajectory "$tmp/$family.jsonl" "$tmp/$family-pp$pp.jsonl" 12 "$family-style PP=$pp vs 1 process"
    same_validation "$tmp/$family.log" "$tmp/$family-pp$pp.log" "$family-style PP=$pp validation"
  done
done
grep -q "pipeline parallel: 4 stages of 1+1+1+1 layers, 1F1B over 4 micro-batches" "$tmp/gpt-pp4.log" ||
  { echo "PP=4 run did not report its layout:"; cat "$tmp/gpt-pp4.log"; exit 1; }

