#!/usr/bin/env bash
# Megatron's sample-based training: --train-samples 40 at global batch 4 is
# --train-iters 10, and --lr-warmup-samples / --lr-decay-samples of 12 / 32
# are 3 / 8 iterations: the same loss, grad norm and learning rate at every
# step, bit for bit (the batch is a power of two, so the samples' ratios are
# the iterations' to the last bit), also across a save and resume. The two
# modes exclude each other with Megatron's rules.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --log-interval 1 --eval-iters 0 --num-threads 1 --lr-decay-style cosine --min-lr 1e-4)
iters=(--train-iters 10 --lr-warmup-iters 3 --lr-decay-iters 8)
samples=(--train-samples 40 --lr-warmup-samples 12 --lr-decay-samples 32)
fail() { echo "FAIL: $*"; exit 1; }
steps() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"learning_rate":[^,]*\|"lm_loss":[^,]*' "$1"; }

"$kiln" train "${common[@]}" "${iters[@]}" --metrics-file "$tmp/iters.jsonl" >/dev/null 2>&1
"$kiln" train "${common[@]}" "${samples[@]}" --metrics-file "$tmp/samples.jsonl" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "sample-based training"; }
[ "$(steps "$tmp/iters.jsonl" | grep -c iteration)" = 10 ] || fail "the iteration-based run did not log 10 steps"
[ "$(steps "$tmp/iters.jsonl")" = "$(steps "$tmp/samples.jsonl")" ] ||
  { diff <(steps "$tmp/iters.jsonl") <(steps "$tmp/samples.jsonl"); fail "the trajectories differ"; }
grep -q 'iteration       10/      10' "$tmp/out" || fail "no 'iteration 10/10' line"
echo "ok: --train-samples 40 = --train-iters 10, losses and learning rates bit for bit"

# Saved at iteration 5 and resumed: the schedule goes on from the consumed samples.
"$kiln" train "${common[@]}" "${samples[@]}" --save "$tmp/ck" --save-interval 5 >/dev/null 2>&1
echo 5 >"$tmp/ck/latest_checkpointed_iteration.txt"
"$kiln" train "${common[@]}" "${samples[@]}" --load "$tmp/ck" --metrics-file "$tmp/resumed.jsonl" >/dev/null 2>&1
[ "$(steps "$tmp/samples.jsonl" | tail -n 20)" = "$(steps "$tmp/resumed.jsonl")" ] ||
  { diff <(steps "$tmp/samples.jsonl" | tail -n 20) <(steps "$tmp/resumed.jsonl"); fail "the resumed run differs"; }
echo "ok: resumed at iteration 5, the same trajectory"

# A remainder of samples is dropped, as Megatron's train_samples // global batch.
"$kiln" train "${common[@]}" --train-samples 42 --metrics-file "$tmp/rem.jsonl" >/dev/null 2>&1
[ "$(steps "$tmp/rem.jsonl" | grep -c iteration)" = 10 ] || fail "--train-samples 42 did not run 10 iterations"
echo "ok: --train-samples 42 runs 10 iterations"

refuses() {
  local want=$1; shift
  if "$kiln" train "${common[@]}" "$@" >/dev/null 2>"$tmp/err"; then fail "accepted: $*"; fi
  [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q -- "$want" "$tmp/err" || { cat "$tmp/err"; fail "wrong error for: $*"; }
  echo "ok: $(cat "$tmp/err")"
}
refuses "expected sample-based training" --train-samples 40 --train-iters 10
refuses "expected sample-based learning rate decay" --train-samples 40 --lr-decay-iters 8
refuses "expected sample-based learning rate warmup" --train-samples 40 --lr-warmup-iters 3
refuses "expected iteration-based learning rate decay" --train-iters 10 --lr-decay-samples 32
refuses "expected iteration-based learning rate warmup" --train-iters 10 --lr-warmup-samples 12
refuses "--lr-warmup-fraction and --lr-warmup-samples" --train-samples 40 --lr-warmup-samples 12 --lr-warmup-fraction 0.1
refuses "must be less than --lr-decay-samples" --train-samples 40 --lr-warmup-samples 40
# An explicit 0 trained the default 300 iterations (N70); fewer samples than
# one global batch said "--train-iters is 0", a flag not given (N71).
refuses "--train-samples must be positive, got 0" --train-samples 0
refuses "--train-samples 1 is less than one global batch" --train-samples 1
