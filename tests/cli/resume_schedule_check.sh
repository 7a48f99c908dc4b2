#!/usr/bin/env bash
# Megatron's OptimizerParamScheduler check on resume: a run whose lr schedule
# flags differ from the checkpoint's stops with Megatron's reason in one
# line; --override-opt_param-scheduler continues on the flags' schedule and
# --use-checkpoint-opt_param-scheduler on the checkpoint's (the learning rate
# of the next iteration equals that of an uninterrupted run on that
# schedule). A checkpoint without the record (an older kiln) is not checked.
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --global-batch-size 4 --train-iters 12 --lr-warmup-iters 2 --lr-decay-style linear --log-interval 1
        --eval-iters 0 --num-threads 2)
lr_at() { grep -o "\"iteration\":$2,[^}]*" "$1" | grep -o '"learning_rate":[^,]*' | cut -d: -f2; }

"$kiln" train "${common[@]}" --lr-decay-iters 12 --metrics-file "$tmp/old.jsonl" >/dev/null
"$kiln" train "${common[@]}" --lr-decay-iters 8 --metrics-file "$tmp/new.jsonl" >/dev/null
"$kiln" train "${common[@]}" --lr-decay-iters 12 --train-iters 6 --save "$tmp/ck" >/dev/null 2>&1
[ "$(lr_at "$tmp/old.jsonl" 7)" != "$(lr_at "$tmp/new.jsonl" 7)" ] || { echo "the two schedules agree at 7"; exit 1; }

status=0
out=$("$kiln" train "${common[@]}" --lr-decay-iters 8 --load "$tmp/ck" 2>&1) || status=$?
want="kiln: error: OptimizerParamScheduler: class input value 32 and checkpointvalue 48 for total number of iterations do not match"
[ "$status" != 0 ] && [ "$(echo "$out" | grep -c error)" = 1 ] && echo "$out" | grep -q "^$want" &&
  echo "$out" | grep -q -- "--override-opt_param-scheduler.*--use-checkpoint-opt_param-scheduler" ||
  { echo "changed --lr-decay-iters not refused with Megatron's reason (status $status)"; echo "$out"; exit 1; }
echo "refused: $(echo "$out" | grep error)"

"$kiln" train "${common[@]}" --lr-decay-iters 8 --load "$tmp/ck" --override-opt_param-scheduler \
  --metrics-file "$tmp/override.jsonl" >/dev/null 2>&1
[ "$(lr_at "$tmp/override.jsonl" 7)" = "$(lr_at "$tmp/new.jsonl" 7)" ] ||
  { echo "override: lr $(lr_at "$tmp/override.jsonl" 7) at 7, the flags' schedule has $(lr_at "$tmp/new.jsonl" 7)"; exit 1; }
"$kiln" train "${common[@]}" --lr-decay-iters 8 --load "$tmp/ck" --use-checkpoint-opt_param-scheduler \
  --metrics-file "$tmp/use.jsonl" >/dev/null 2>&1
[ "$(lr_at "$tmp/use.jsonl" 7)" = "$(lr_at "$tmp/old.jsonl" 7)" ] ||
  { echo "use-checkpoint: lr $(lr_at "$tmp/use.jsonl" 7) at 7, the checkpoint's schedule has $(lr_at "$tmp/old.jsonl" 7)"; exit 1; }
echo "override: lr $(lr_at "$tmp/override.jsonl" 7) at 7 (the flags'); use-checkpoint: $(lr_at "$tmp/use.jsonl" 7) (the checkpoint's)"

status=0
out=$("$kiln" train "${common[@]}" --load "$tmp/ck" --override-opt_param-scheduler --use-checkpoint-opt_param-scheduler 2>&1) ||
  status=$?
[ "$status" != 0 ] && echo "$out" | grep -q "exclude each other (Megatron: both override and use-checkpoint are set.)" ||
  { echo "both flags accepted"; echo "$out"; exit 1; }

# An older kiln's checkpoint has no record: nothing to compare.
python3 - "$tmp/ck/iter_0000006/meta.json" <<'PY'
import json, sys
meta = json.load(open(sys.argv[1])); del meta["opt_param_scheduler"]; json.dump(meta, open(sys.argv[1], "w"))
PY
"$kiln" train "${common[@]}" --lr-decay-iters 8 --load "$tmp/ck" --metrics-file "$tmp/oldck.jsonl" >/dev/null 2>&1
[ "$(lr_at "$tmp/oldck.jsonl" 7)" = "$(lr_at "$tmp/new.jsonl" 7)" ] || { echo "old checkpoint: not the flags' schedule"; exit 1; }
echo "both flags together refused; a checkpoint without the record resumes unchecked"
