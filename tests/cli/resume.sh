#!/usr/bin/env bash
# Resume is exact: a run saved at step 6 and resumed with --load reports the
# same loss, bit for bit, at every later step as an uninterrupted run.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --train-iters 12 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 2)

"$kiln" train "${common[@]}" --metrics-file "$tmp/full.jsonl" >/dev/null
"$kiln" train "${common[@]}" --train-iters 12 --save "$tmp/ck" --save-interval 6 --metrics-file "$tmp/first.jsonl" >/dev/null
test "$(cat "$tmp/ck/latest_checkpointed_iteration.txt")" = 12
echo 6 > "$tmp/ck/latest_checkpointed_iteration.txt"   # resume from the step-6 checkpoint
"$kiln" train "${common[@]}" --load "$tmp/ck" --metrics-file "$tmp/resumed.jsonl" >/dev/null

# Every step after 6: identical loss and grad norm, compared as exact JSON numbers.
pick() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"lm_loss":[^,]*' "$1" | paste -d' ' - - - ; }
full=$(pick "$tmp/full.jsonl" | awk '$2 ~ /"iteration":([7-9]|1[0-2])$/' )
resumed=$(pick "$tmp/resumed.jsonl")
[ -n "$full" ] || { echo "no metrics from the full run"; exit 1; }
if [ "$full" != "$resumed" ]; then
  echo "resumed run diverged:"; diff <(echo "$full") <(echo "$resumed"); exit 1
fi
echo "resume exact over $(echo "$resumed" | wc -l) steps"
