#!/usr/bin/env bash
# Megatron's --step-batch-size-schedule "THRESHOLD:BS ...": thresholds are
# tokens (/ --seq-length 32 = samples), so "0:2 256:4 512:8" takes batch 2
# from 0 consumed samples, 4 from 8 and 8 from 16: 2 2 2 2 4 4 8 8 8 8 8 8
# for --train-samples 64 (12 iterations). Checked:
#   - the iteration lines' "global batch size:" and "consumed samples:";
#   - the schedule equals, bit for bit (loss, grad norm, learning rate), the
#     run assembled from fixed-batch pieces (2, 4, 8, each resumed from the
#     last one's checkpoint);
#   - a resume mid-schedule equals the uninterrupted run;
#   - --global-batch-size with it (kiln's extension) only as its last batch;
#   - bad values are refused in one line.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --log-interval 1 --eval-iters 0 --num-threads 1 --lr-decay-style cosine --min-lr 1e-4
        --lr-warmup-samples 8 --lr-decay-samples 64)
sched=(--train-samples 64 --step-batch-size-schedule "0:2 256:4 512:8")
fail() { echo "FAIL: $*"; exit 1; }
steps() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"learning_rate":[^,]*\|"lm_loss":[^,]*' "$1"; }
column() { grep -o "$1: *[0-9]*" "$2" | awk '{ printf "%s ", $NF }'; }

"$kiln" train "${common[@]}" "${sched[@]}" --metrics-file "$tmp/sched.jsonl" >"$tmp/sched.log" 2>&1 ||
  { cat "$tmp/sched.log"; fail "the schedule run"; }
got=$(column 'global batch size' "$tmp/sched.log")
[ "$got" = "2 2 2 2 4 4 8 8 8 8 8 8 " ] || fail "global batch sizes: $got"
got=$(column 'consumed samples' "$tmp/sched.log")
[ "$got" = "2 4 6 8 12 16 24 32 40 48 56 64 " ] || fail "consumed samples: $got"
grep -q 'iteration       12/      12' "$tmp/sched.log" || fail "no 'iteration 12/12' line"
grep -q '> using step batch size schedule: 0:2 256:4 512:8' "$tmp/sched.log" || fail "no schedule line"
grep -q '>= 256 tokens (8 samples) -> batch_size=4, num_microbatches=2' "$tmp/sched.log" || fail "no entry line"
echo "ok: global batch sizes 2 2 2 2 4 4 8 8 8 8 8 8 at consumed samples 2 ... 64"

# The same steps from fixed batches, as tests/cli/batch_rampup.sh does.
piece() {  # BATCH LAST_ITERATION [load]
  "$kiln" train "${common[@]}" --global-batch-size "$1" --train-samples $(($1 * $2)) --save "$tmp/ck" \
    --save-interval 1000 ${3:+--load "$tmp/ck" --override-opt_param-scheduler} --metrics-file "$tmp/pieces.jsonl" \
    >"$tmp/piece.log" 2>&1 || { cat "$tmp/piece.log"; fail "piece of batch $1"; }
}
piece 2 4 && piece 4 6 load && piece 8 12 load
[ "$(steps "$tmp/sched.jsonl")" = "$(steps "$tmp/pieces.jsonl")" ] ||
  { diff <(steps "$tmp/sched.jsonl") <(steps "$tmp/pieces.jsonl"); fail "the schedule differs from the pieces"; }
echo "ok: the schedule equals fixed batches 2, 4, 8 resumed one after another, bit for bit"

# Saved at iteration 5 (batch 4, 12 samples consumed) and resumed with the
# same flags: the schedule goes on from the consumed samples.
"$kiln" train "${common[@]}" "${sched[@]}" --save "$tmp/mid" --save-interval 5 >/dev/null 2>&1
echo 5 >"$tmp/mid/latest_checkpointed_iteration.txt"
"$kiln" train "${common[@]}" "${sched[@]}" --load "$tmp/mid" --metrics-file "$tmp/resumed.jsonl" \
  >"$tmp/resumed.log" 2>&1 || { cat "$tmp/resumed.log"; fail "the resume"; }
[ "$(steps "$tmp/sched.jsonl" | tail -n 28)" = "$(steps "$tmp/resumed.jsonl")" ] ||
  { diff <(steps "$tmp/sched.jsonl" | tail -n 28) <(steps "$tmp/resumed.jsonl"); fail "the resumed schedule differs"; }
got=$(column 'global batch size' "$tmp/resumed.log")
[ "$got" = "4 8 8 8 8 8 8 " ] || fail "resumed global batch sizes: $got"
echo "ok: resumed at iteration 5, the same schedule and trajectory"

# Megatron refuses --global-batch-size with the schedule; NVIDIA's GPT-3
# example gives both, so kiln takes it when it is the last batch size.
"$kiln" train "${common[@]}" "${sched[@]}" --global-batch-size 8 --metrics-file "$tmp/gbs.jsonl" >/dev/null 2>&1 ||
  fail "--global-batch-size 8 with the schedule ending at 8"
[ "$(steps "$tmp/sched.jsonl")" = "$(steps "$tmp/gbs.jsonl")" ] || fail "--global-batch-size 8 changed the run"
echo "ok: --global-batch-size equal to the last batch size is the same run"

refuses() {
  local want=$1; shift
  if "$kiln" train "${common[@]}" "$@" >/dev/null 2>"$tmp/err"; then fail "accepted: $*"; fi
  [ "$(wc -l <"$tmp/err")" = 1 ] && grep -qF -- "$want" "$tmp/err" || { cat "$tmp/err"; fail "wrong error for: $*"; }
  echo "ok: $(cat "$tmp/err")"
}
refuses "--global-batch-size 16 differs from --step-batch-size-schedule's last batch size 8" "${sched[@]}" \
  --global-batch-size 16
refuses "both set the batch schedule" "${sched[@]}" --rampup-batch-size 2 2 24
refuses "current global batch size (3) is not divisible by micro_batch_size (2)" --train-samples 64 \
  --step-batch-size-schedule "0:2 256:3 512:8"
refuses "first schedule entry must have threshold 0" --train-samples 64 --step-batch-size-schedule "32:2"
refuses "schedule thresholds must be strictly increasing" --train-samples 64 --step-batch-size-schedule "0:2 16:4"
refuses "expected format THRESHOLD:BATCH_SIZE" --train-samples 64 --step-batch-size-schedule "0=2"
