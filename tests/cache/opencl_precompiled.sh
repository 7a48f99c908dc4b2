#!/usr/bin/env bash
# On the opencl backend (PoCL in CI): after `kiln precompile`, `kiln train
# --require-precompiled` builds no OpenCL program (zero compilations), and a
# micro-batch change is a miss naming the shape. One step, no eval, to keep
# PoCL's cold builds short. Prints SKIPPED and passes without an OpenCL device.
source "$(dirname "$0")/common.bash"
if ! "$kiln" devices 2>&1 | grep -A1 -E '^backend opencl ' | grep -q '^  device 0:'; then
  echo "SKIPPED: no OpenCL device (kiln devices found no opencl device 0)"
  exit 0
fi
cache=$tmp/cache
ocl=("${model[@]}" --backend opencl --train-iters 1 --eval-iters 0)
"$kiln" precompile "${ocl[@]}" --cache-dir "$cache" --num-parallel 2 >"$tmp/pre.log" 2>&1 ||
  { cat "$tmp/pre.log"; fail "precompile"; }
grep -E "^(precompile: extracted|Total|Already)" "$tmp/pre.log"
total=$(summary "Total graphs" "$tmp/pre.log")
[ "$(summary "Total successful compilations" "$tmp/pre.log")" = "$total" ] || fail "not every graph compiled"
"$kiln" train "${ocl[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; fail "train --require-precompiled"; }
grep "compile cache:" "$tmp/train.log"
grep -q "compile cache: $total graphs from the cache (loading took [0-9.]* s), 0 compiled" "$tmp/train.log" ||
  fail "train compiled something after precompile"
if "$kiln" train "${ocl[@]}" --micro-batch-size 1 --cache-dir "$cache" --require-precompiled >"$tmp/miss.log" 2>&1; then
  fail "a different micro-batch size must miss"
fi
grep -q "differs in shape (.*port 'tokens' is \[1, 16\] here, \[2, 16\] in the cache" "$tmp/miss.log" ||
  { tail -1 "$tmp/miss.log"; fail "the miss does not name the shape"; }
