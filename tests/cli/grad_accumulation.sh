#!/usr/bin/env bash
# Gradient accumulation is exact up to float rounding: 2 micro-batches of 4
# give the same trajectory as 1 micro-batch of 8 (same global batch). So is
# validation: --eval-iters counts global batches (Megatron's meaning), so the
# validation loss does not depend on how a global batch splits.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --global-batch-size 8
        --train-iters 8 --log-interval 1 --eval-interval 4 --eval-iters 2 --num-threads 2)
"$kiln" train "${common[@]}" --micro-batch-size 8 --metrics-file "$tmp/one.jsonl" >"$tmp/one.log"
"$kiln" train "${common[@]}" --micro-batch-size 4 --metrics-file "$tmp/two.jsonl" >"$tmp/two.log"
loss() { grep -o '"lm_loss":[^,]*' "$1" | cut -d: -f2; }
paste <(loss "$tmp/one.jsonl") <(loss "$tmp/two.jsonl") | awk '
  { d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > worst) worst = r; n++ }
  END { printf "%d steps, worst relative difference %.2e\n", n, worst; exit !(n == 8 && worst < 1e-5) }'
valid() { grep "validation loss at iteration" "$1" | grep -o 'lm loss value: [^ ]*' | cut -d' ' -f4; }
paste <(valid "$tmp/one.log") <(valid "$tmp/two.log") | awk '
  { d = $1 - $2; if (d < 0) d = -d; r = d / $1; if (r > worst) worst = r; n++ }
  END { printf "%d evaluations, worst relative difference %.2e\n", n, worst; exit !(n == 2 && worst < 1e-5) }'
