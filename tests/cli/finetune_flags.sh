#!/usr/bin/env bash
# Megatron's flags for starting from a checkpoint: --finetune loads the
# model only (iteration and consumed samples from 0, fresh AdamW moments and
# RNG state); --no-save-optim / --no-save-rng write checkpoints without that
# state, and loading one then needs --no-load-optim / --no-load-rng (one-line
# errors otherwise, as Megatron's); --no-load-optim continues the iteration
# count with fresh moments.
set -euo pipefail
# Resumes that change the schedule flags (--train-iters sets Megatron's weight-decay
# steps) take the flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 8
        --lr 5e-3 --lr-warmup-iters 2 --log-interval 1 --eval-iters 0 --num-threads 2)
loss_at() { grep -o "\"iteration\":$2,[^}]*" "$1" | grep -o '"lm_loss":[^,}]*' | cut -d: -f2; }
expect_error() {
  local pattern=$1; shift
  if "$kiln" train "$@" >/dev/null 2>"$tmp/err"; then echo "accepted: $*"; exit 1; fi
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || { echo "not one line:"; cat "$tmp/err"; exit 1; }
  grep -Eq "^kiln: error: .*$pattern" "$tmp/err" || { echo "expected /$pattern/:"; cat "$tmp/err"; exit 1; }
}

# A trained checkpoint (default dropout 0.1, so there is RNG state to speak of).
"$kiln" train "${common[@]}" --train-iters 60 --save "$tmp/base" --metrics-file "$tmp/base.jsonl" >/dev/null 2>&1

# --finetune: iteration 1 again, consumed samples from 0, and the trained
# model's loss on the first batch, far below a fresh model's.
"$kiln" train "${common[@]}" --train-iters 3 --load "$tmp/base" --finetune --save "$tmp/ft" \
  --metrics-file "$tmp/ft.jsonl" >"$tmp/ft.log" 2>&1
grep -q 'finetuning from .*iter_0000060 (iteration 60): model loaded, iteration 0' "$tmp/ft.log"
head -1 "$tmp/ft.jsonl" | grep '"consumed_samples":8,' | grep -q '"iteration":1,' || { head -1 "$tmp/ft.jsonl"; exit 1; }
fresh=$(loss_at "$tmp/base.jsonl" 1); tuned=$(loss_at "$tmp/ft.jsonl" 1)
awk -v f="$fresh" -v t="$tuned" 'BEGIN { exit !(t < f - 1.0) }' || { echo "finetune started at $tuned, fresh at $fresh"; exit 1; }
[ -d "$tmp/ft/iter_0000003" ] && [ "$(cat "$tmp/ft/latest_checkpointed_iteration.txt")" = 3 ]
expect_error '--finetune needs --load' "${common[@]}" --train-iters 3 --finetune

# --no-save-optim / --no-save-rng, and what loading such a checkpoint needs.
"$kiln" train "${common[@]}" --train-iters 4 --save "$tmp/lean" --no-save-optim --no-save-rng >/dev/null 2>&1
[ ! -e "$tmp/lean/iter_0000004/optimizer.safetensors" ] || { echo "--no-save-optim wrote the optimizer"; exit 1; }
grep -Eq '"rng": ?null' "$tmp/lean/iter_0000004/meta.json" || { echo "--no-save-rng saved the RNG state"; exit 1; }
expect_error 'has no optimizer state \(saved with --no-save-optim\); pass --no-load-optim or --finetune' \
  "${common[@]}" --train-iters 6 --load "$tmp/lean" --override-opt_param-scheduler
expect_error 'has no RNG state \(saved with --no-save-rng\); pass --no-load-rng or --finetune' \
  "${common[@]}" --train-iters 6 --load "$tmp/lean" --override-opt_param-scheduler --no-load-optim
"$kiln" train "${common[@]}" --train-iters 6 --load "$tmp/lean" --override-opt_param-scheduler --no-load-optim --no-load-rng \
  --metrics-file "$tmp/lean.jsonl" >"$tmp/lean.log" 2>&1
grep -q 'resumed from .* at iteration 4' "$tmp/lean.log"
grep -q '"iteration":5,' "$tmp/lean.jsonl"
"$kiln" train "${common[@]}" --train-iters 6 --load "$tmp/lean" --finetune >/dev/null 2>&1

# --no-load-optim on a full checkpoint: same iteration count, fresh moments,
# so the first update differs from a plain resume's.
"$kiln" train "${common[@]}" --train-iters 62 --load "$tmp/base" --override-opt_param-scheduler --metrics-file "$tmp/plain.jsonl" >/dev/null 2>&1
"$kiln" train "${common[@]}" --train-iters 62 --load "$tmp/base" --override-opt_param-scheduler --no-load-optim --metrics-file "$tmp/fresh.jsonl" \
  >/dev/null 2>&1
[ "$(loss_at "$tmp/plain.jsonl" 61)" = "$(loss_at "$tmp/fresh.jsonl" 61)" ] ||
  { echo "iteration 61's loss (before any update) differs"; exit 1; }
[ "$(loss_at "$tmp/plain.jsonl" 62)" != "$(loss_at "$tmp/fresh.jsonl" 62)" ] ||
  { echo "--no-load-optim changed nothing"; exit 1; }
echo "finetune_flags: ok"
