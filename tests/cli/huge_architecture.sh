#!/usr/bin/env bash
# N30 and F9 (findings 2026-11-27): architecture sizes are bounded by what
# the IR can address and what the host can hold, from the sizes alone and
# before anything is built. `--num-layers 1000000000` (and n_layer in an
# imported config.json, num_layers in a checkpoint's meta.json) used to build
# a name per parameter until the OOM killer ended it; `--hidden-size 1048576`
# failed late with "cpu: compile failed: IR value too large".
# Not under ASan: it caps each run's address space at 4 GiB (ulimit -v), so that a
# regression fails here instead of OOM-killing a shared machine, and ASan's shadow
# memory needs terabytes of address space; the refusals run in the release stage.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
# One line on stderr naming `want`, non-zero exit, within `limit` seconds.
expect_refused() {
  local want=$1 limit=$2; shift 2
  local t0=$(date +%s%N)
  # Bounded, so that a regression on a shared machine stays a failure here
  # rather than another job's OOM kill.
  (ulimit -v 4194304; timeout 10 "$kiln" "$@") >"$tmp/out" 2>"$tmp/err"; local rc=$?
  local ms=$((($(date +%s%N) - t0) / 1000000))
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ "$(wc -l <"$tmp/err")" -ne 1 ] || ! grep -q -- "$want" "$tmp/err" ||
     [ $ms -gt $((limit * 1000)) ]; then
    echo "FAIL: kiln $* -> rc=$rc after $ms ms, stderr:"; cat "$tmp/err"; fails=$((fails+1))
  else
    echo "ok ($ms ms): $(cat "$tmp/err")"
  fi
}
small="--hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 --eval-iters 0"
expect_refused "--num-layers 1000000000 needs at least .* lower --num-layers" 1 \
  train $small --train-iters 2 --num-layers 1000000000
expect_refused "--num-layers 1000000000 needs at least" 1 precompile $small --train-iters 2 --num-layers 1000000000
expect_refused "QKV weight would hold 3.3e+12 elements (--hidden-size 1048576), above kiln's 2^40 per tensor" 5 \
  train --num-layers 2 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 --train-iters 2 \
  --eval-iters 0 --hidden-size 1048576

# The same layer count from files: a checkpoint's meta.json and an HF config.json.
"$kiln" train --num-layers 2 $small --train-iters 1 --save "$tmp/ck" >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; echo "FAIL: train"; exit 1; }
"$kiln" export --load "$tmp/ck" --format hf --output "$tmp/hf" >"$tmp/export.log" 2>&1 ||
  { cat "$tmp/export.log"; echo "FAIL: export"; exit 1; }
sed -i 's/"n_layer": 2/"n_layer": 1000000000/' "$tmp/hf/config.json"
grep -q '"n_layer": 1000000000' "$tmp/hf/config.json" || { echo "FAIL: no n_layer to edit"; exit 1; }
expect_refused "--num-layers 1000000000 needs at least" 5 import --format hf --input "$tmp/hf" --save "$tmp/imported"
meta=$(ls "$tmp"/ck/iter_*/meta.json)
sed -i 's/"num_layers": *2/"num_layers":1000000000/' "$meta"
grep -q '"num_layers":1000000000' "$meta" || { echo "FAIL: no num_layers to edit"; exit 1; }
# The line names the meta.json (it named only --num-layers, a flag not given,
# and --use-checkpoint-args's path said just "checkpoint meta.json" for a
# damaged key: N30's meta.json path).
expect_refused "checkpoint $meta describes a model kiln cannot build (was it edited?): --num-layers 1000000000 needs" 5 \
  train --use-checkpoint-args --load "$tmp/ck" --micro-batch-size 2 --train-iters 2 --eval-iters 0
expect_refused "checkpoint $meta describes a model kiln cannot build" 5 generate --load "$tmp/ck" --prompt x
expect_refused "checkpoint $meta describes a model kiln cannot build" 5 \
  export --load "$tmp/ck" --format hf --output "$tmp/never"
sed -i 's/"num_layers":1000000000/"num_layers":"x"/' "$meta"
expect_refused "checkpoint $meta has no valid model config: \"config\" key 'num_layers' is \"x\"" 5 \
  train --use-checkpoint-args --load "$tmp/ck" --micro-batch-size 2 --train-iters 2 --eval-iters 0
[ $fails -eq 0 ] || exit 1
