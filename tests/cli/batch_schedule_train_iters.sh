#!/usr/bin/env bash
# kiln's extension: --rampup-batch-size (which Megatron refuses with
# --train-iters: "expected no batch-size rampup for iteration-based
# training") and --step-batch-size-schedule with --train-iters. The batch
# follows the consumed samples as with --train-samples; the run takes
# --train-iters steps and the lr schedule counts steps. Checked for each:
# the batch sizes and consumed samples of 8 steps, and that a run saved
# mid-ramp (iteration 5) and resumed goes on bit for bit as the
# uninterrupted one (the consumed samples come back from the checkpoint).
set -euo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
common=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
        --log-interval 1 --eval-iters 0 --num-threads 1 --lr-decay-style cosine --min-lr 1e-4
        --lr-warmup-iters 2 --train-iters 8)
fail() { echo "FAIL: $*"; exit 1; }
steps() { grep -o '"grad_norm":[^,]*\|"iteration":[0-9]*\|"learning_rate":[^,]*\|"lm_loss":[^,]*' "$1"; }
column() { grep -o "$1: *[0-9]*" "$2" | awk '{ printf "%s ", $NF }'; }

check() {  # NAME BATCHES CONSUMED RESUMED_BATCHES then the batch flags
  local name=$1 batches=$2 consumed=$3 resumed=$4; shift 4
  "$kiln" train "${common[@]}" "$@" --save "$tmp/$name" --save-interval 5 --metrics-file "$tmp/$name.jsonl" \
    >"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "$name"; }
  got=$(column 'global batch size' "$tmp/$name.log")
  [ "$got" = "$batches" ] || fail "$name global batch sizes: $got"
  got=$(column 'consumed samples' "$tmp/$name.log")
  [ "$got" = "$consumed" ] || fail "$name consumed samples: $got"
  grep -q 'iteration        8/       8' "$tmp/$name.log" || fail "$name: no 'iteration 8/8' line"
  echo "ok: $name: global batch sizes $batches"
  echo 5 >"$tmp/$name/latest_checkpointed_iteration.txt"
  "$kiln" train "${common[@]}" "$@" --load "$tmp/$name" --metrics-file "$tmp/$name.resumed.jsonl" \
    >"$tmp/$name.resumed.log" 2>&1 || { cat "$tmp/$name.resumed.log"; fail "$name resumed"; }
  got=$(column 'global batch size' "$tmp/$name.resumed.log")
  [ "$got" = "$resumed" ] || fail "$name resumed global batch sizes: $got"
  [ "$(steps "$tmp/$name.jsonl" | tail -n 12)" = "$(steps "$tmp/$name.resumed.jsonl")" ] ||
    { diff <(steps "$tmp/$name.jsonl" | tail -n 12) <(steps "$tmp/$name.resumed.jsonl"); fail "$name resume differs"; }
  grep -q "at iteration 5 (12 consumed samples)" "$tmp/$name.resumed.log" || fail "$name: not resumed at 12 samples"
  echo "ok: $name resumed at iteration 5 (12 consumed samples): the same run"
}
# 2 2 24 up to 8: the batch grows by 2 every 8 consumed samples.
check rampup "2 2 2 2 4 4 6 6 " "2 4 6 8 12 16 22 28 " "4 6 6 " --global-batch-size 8 --rampup-batch-size 2 2 24
# Batch 4 from 256 tokens (8 samples), 8 from 512 (16).
check schedule "2 2 2 2 4 4 8 8 " "2 4 6 8 12 16 24 32 " "4 8 8 " --step-batch-size-schedule "0:2 256:4 512:8"
