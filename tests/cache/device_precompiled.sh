#!/usr/bin/env bash
# On the device backends (OpenCL on PoCL and Vulkan on lavapipe in CI):
# after `kiln precompile`, `kiln train --require-precompiled` compiles
# nothing (zero compilations: no OpenCL program, no Vulkan pipeline), and a
# micro-batch change is a miss naming the shape. One step, no eval, to keep
# the drivers' cold builds short. With --attention-backend fused (and no
# attention dropout), so precompile must choose the fused core as train does. A backend without a device here is
# skipped with a message.
source "$(dirname "$0")/common.bash"
check_backend() {
  local backend=$1 cache=$tmp/cache-$1
  if ! "$kiln" devices 2>&1 | grep -A1 -E "^backend $backend " | grep -q '^  device 0:'; then
    echo "SKIPPED $backend: no $backend device (kiln devices found no $backend device 0)"
    return
  fi
  local args=("${model[@]}" --backend "$backend" --train-iters 1 --eval-iters 0 --attention-backend fused
              --attention-dropout 0)
  "$kiln" precompile "${args[@]}" --cache-dir "$cache" --num-parallel 2 >"$tmp/pre.log" 2>&1 ||
    { cat "$tmp/pre.log"; fail "$backend: precompile"; }
  grep -E "^(precompile: extracted|Total|Already)" "$tmp/pre.log"
  grep -q "^precompile: attention: fused (ATTENTION on backend $backend" "$tmp/pre.log" ||
    fail "$backend: precompile did not choose the fused attention core"
  local total
  total=$(summary "Total graphs" "$tmp/pre.log")
  [ "$(summary "Total successful compilations" "$tmp/pre.log")" = "$total" ] || fail "$backend: not every graph compiled"
  "$kiln" train "${args[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/train.log" 2>&1 ||
    { cat "$tmp/train.log"; fail "$backend: train --require-precompiled"; }
  grep "compile cache:" "$tmp/train.log"
  grep -q "compile cache: $(units_of "$tmp/pre.log") graphs from the cache (loading took [0-9.]* s), 0 compiled" "$tmp/train.log" ||
    fail "$backend: train compiled something after precompile"
  if "$kiln" train "${args[@]}" --micro-batch-size 1 --cache-dir "$cache" --require-precompiled >"$tmp/miss.log" 2>&1; then
    fail "$backend: a different micro-batch size must miss"
  fi
  grep -q "differs in shape (.*port 'tokens' is \[1, 16\] here, \[2, 16\] in the cache" "$tmp/miss.log" ||
    { tail -1 "$tmp/miss.log"; fail "$backend: the miss does not name the shape"; }
  echo "$backend: precompiled run compiled nothing; the micro-batch change was a miss naming the shape"
}
check_backend opencl
check_backend vulkan
