#!/usr/bin/env bash
# Mesa's shader cache lives in kiln's compile cache (compiler_cache/
# driver_caches.h): a Vulkan precompile on lavapipe, whose compile runs every
# dispatch once, leaves llvmpipe's compiled shaders in DIR/drivers/mesa, and
# the train run after it reports 0.0 s of setup compiling. A user's own
# MESA_SHADER_CACHE_DIR wins: then kiln's directory gets no Mesa cache.
# Timing is bench/first_iteration.sh's, not this test's. Skipped (77)
# without a Vulkan device.
source "$(dirname "$0")/common.bash"
unset MESA_SHADER_CACHE_DIR MESA_SHADER_CACHE_DISABLE
if ! "$kiln" devices 2>&1 | grep -A1 -E "^backend vulkan " | grep -q '^  device 0:'; then
  echo "SKIPPED: no vulkan device (kiln devices found no vulkan device 0)"
  exit 77
fi
args=("${model[@]}" --backend vulkan --train-iters 1 --eval-iters 0)
cache=$tmp/cache
"$kiln" precompile "${args[@]}" --cache-dir "$cache" --num-parallel 2 >"$tmp/pre.log" 2>&1 ||
  { cat "$tmp/pre.log"; fail "precompile"; }
files=$(count_files "$cache/drivers/mesa" '*')
echo "Mesa cache files in kiln's cache after precompile: $files"
[ "$files" -gt 1 ] || { find "$cache/drivers" | head; fail "the precompile stored no compiled shaders in $cache/drivers/mesa"; }
"$kiln" train "${args[@]}" --cache-dir "$cache" --require-precompiled >"$tmp/train.log" 2>&1 ||
  { cat "$tmp/train.log"; fail "train --require-precompiled"; }
grep "setup spent" "$tmp/train.log"
grep -q "setup spent 0.0 s compiling" "$tmp/train.log" || fail "setup compiled after precompile"

# The user's directory wins.
mine=$tmp/mine
mkdir -p "$mine"
MESA_SHADER_CACHE_DIR=$mine "$kiln" precompile "${args[@]}" --cache-dir "$tmp/other" --num-parallel 2 \
  >"$tmp/mine.log" 2>&1 || { cat "$tmp/mine.log"; fail "precompile with MESA_SHADER_CACHE_DIR set"; }
[ ! -e "$tmp/other/drivers/mesa" ] || fail "kiln overrode the user's MESA_SHADER_CACHE_DIR"
[ "$(count_files "$mine" '*')" -gt 1 ] || fail "Mesa did not use the user's MESA_SHADER_CACHE_DIR"
echo PASS
