#!/usr/bin/env bash
# Crafted or impossible numbers (issue 13, items 12, 18 and 20) fail in one
# line naming the flag or file, before any training:
# - sizes whose products overflow or exceed the IR's 2^40 elements per tensor;
# - a --save that cannot be written (found only at the first save before,
#   after the whole interval's training);
# - a checkpoint whose meta.json counters are impossible, or whose name and
#   meta.json disagree on the iteration;
# and a resume with nothing left to train says so instead of exiting silently.
set -uo pipefail
# The resumes extend --train-iters (Megatron's weight-decay steps), so they take the
# flags' schedule: --override-opt_param-scheduler (docs/CHECKPOINTS.md).
kiln=$1
tmp=$(mktemp -d); trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fails=0
expect_error() {
  local want=$1; shift
  "$kiln" "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?
  grep -v '^\[kiln\] \[info\]' "$tmp/err" > "$tmp/err.lines"
  local lines=$(wc -l <"$tmp/err.lines")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err.lines" || [ -s "$tmp/out" ]; then
    echo "FAIL: kiln $* -> rc=$rc, stderr ($lines lines):"; cat "$tmp/err"; fails=$((fails+1))
  else
    echo "ok: $(cat "$tmp/err.lines")"
  fi
}
small=(--num-layers 1 --hidden-size 32 --num-attention-heads 2 --seq-length 16 --micro-batch-size 2 --eval-iters 0)
expect_error "--micro-batch-size must be in \[1, 1073741824\], got 4611686018427387904" \
  train --train-iters 0 --micro-batch-size 4611686018427387904
expect_error "the attention scores would hold .* lower --micro-batch-size, --seq-length" \
  train --train-iters 1 --seq-length 1000000 --max-position-embeddings 1000000
touch "$tmp/a-file"
expect_error "--save $tmp/a-file is not a directory" train "${small[@]}" --train-iters 1 --save "$tmp/a-file"
expect_error "--save $tmp/a-file/sub: cannot create it" train "${small[@]}" --train-iters 1 --save "$tmp/a-file/sub"

"$kiln" train "${small[@]}" --train-iters 2 --save "$tmp/ck" >"$tmp/good.out" 2>&1 ||
  { cat "$tmp/good.out"; echo "FAIL: the good run failed"; exit 1; }
meta=$tmp/ck/iter_0000002/meta.json
cp "$meta" "$tmp/meta.orig"
edit() { python3 -c "import json,sys; m=json.load(open('$tmp/meta.orig')); m['$1']=$2; json.dump(m, open('$meta','w'))"; }
edit consumed_samples -5000
expect_error "'consumed_samples' is -5000, impossible at iteration 2" train "${small[@]}" --train-iters 3 --load "$tmp/ck" --override-opt_param-scheduler
edit consumed_samples 9223372036854775000
expect_error "'consumed_samples' is 9223372036854775000, impossible" train "${small[@]}" --train-iters 3 --load "$tmp/ck" --override-opt_param-scheduler
edit skipped_iterations 7
expect_error "'skipped_iterations' is 7, impossible at iteration 2" train "${small[@]}" --train-iters 3 --load "$tmp/ck" --override-opt_param-scheduler
edit iteration 20
expect_error "is named as iteration 2 but its meta.json says iteration 20" train "${small[@]}" --train-iters 3 --load "$tmp/ck" --override-opt_param-scheduler
cp "$tmp/meta.orig" "$meta"

"$kiln" train "${small[@]}" --train-iters 2 --load "$tmp/ck" --override-opt_param-scheduler >"$tmp/out" 2>"$tmp/err"; rc=$?
if [ $rc -ne 0 ] || ! grep -q "nothing to train: the checkpoint is at iteration 2 and --train-iters is 2" "$tmp/err"; then
  echo "FAIL: a resume with nothing to train (rc=$rc):"; cat "$tmp/err"; fails=$((fails+1))
else
  echo "ok: $(grep 'nothing to train' "$tmp/err")"
fi
exit $fails
