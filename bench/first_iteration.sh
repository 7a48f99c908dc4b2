#!/usr/bin/env bash
# Issue 32, "nothing left to compile at step 1" (docs/CACHE.md): after
# `kiln precompile`, with the drivers' own caches cleared, how long the first
# iteration of a 20-step `kiln train --require-precompiled` takes against a
# steady one, per backend. PoCL's kernel cache is off (POCL_KERNEL_CACHE=0);
# the user's Mesa shader cache is a fresh empty directory (XDG_CACHE_HOME),
# and MESA_SHADER_CACHE_DIR is unset, so the only Mesa cache there is is the
# one kiln hosts in its compile cache directory (compiler_cache/driver_caches.h),
# filled by the precompile. MESA_CACHE=off instead disables Mesa's cache
# altogether (MESA_SHADER_CACHE_DISABLE=true).
# Prints, per backend: the setup line's compile seconds, iteration 1 and 2
# (ms), the median of iterations 3-20 (the steady iteration), and
# iteration 1 / steady (the acceptance bound is 1.5).
# The model is the hidden-64 test model (2 layers, seq 32) unless LAYERS,
# HIDDEN and SEQ say otherwise: its steady step is 2-15 ms, so a few ms of
# warm-up that is not compiling (threads waking, first page touches) moves
# the ratio; a larger model shows the same compile time against a longer step.
# usage: [DROPOUT=0.1] [MESA_CACHE=off] [LAYERS=2] [HIDDEN=64] [SEQ=32]
#        bench/first_iteration.sh [build-dir] [backend...]
#        (default backends: opencl vulkan)
set -euo pipefail
build=${1:-build}
shift || true
backends=("$@")
[ ${#backends[@]} -gt 0 ] || backends=(opencl vulkan)
kiln=$build/bin/kiln
export POCL_KERNEL_CACHE=0
unset MESA_SHADER_CACHE_DIR MESA_SHADER_CACHE_DISABLE
[ "${MESA_CACHE:-}" != off ] || export MESA_SHADER_CACHE_DISABLE=true
dropout=${DROPOUT:-0.1}
model=(--num-layers "${LAYERS:-2}" --hidden-size "${HIDDEN:-64}" --num-attention-heads 4 --seq-length "${SEQ:-32}"
       --micro-batch-size 2
       --global-batch-size 4 --train-iters 20 --eval-iters 0 --log-interval 1 --mock-data --vocab-size 512
       --hidden-dropout "$dropout" --attention-dropout "$dropout")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export XDG_CACHE_HOME=$tmp/xdg-cache

# "N ms" per iteration of a train log, one "iteration ms" pair a line.
iteration_ms() { sed -n 's/.*iteration *\([0-9]*\)\/.*elapsed time per iteration (ms): *\([0-9.]*\).*/\1 \2/p' "$1"; }
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "nan" }'; }

printf '%-8s %10s %10s %10s %10s %8s %10s\n' backend setup_s pre_s iter1_ms iter2_ms steady_ms iter1/st
for b in "${backends[@]}"; do
  cache=$tmp/cache-$b
  t0=$(date +%s.%N)
  "$kiln" precompile "${model[@]}" --backend "$b" --cache-dir "$cache" --num-parallel 2 >"$tmp/pre-$b.log" 2>&1 ||
    { echo "$b: precompile failed or backend unavailable: $(tail -1 "$tmp/pre-$b.log")"; continue; }
  pre=$(echo "$(date +%s.%N) - $t0" | bc)
  "$kiln" train "${model[@]}" --backend "$b" --cache-dir "$cache" --require-precompiled >"$tmp/train-$b.log" 2>&1 ||
    { echo "$b: train failed: $(tail -1 "$tmp/train-$b.log")"; continue; }
  setup=$(sed -n 's/.*setup spent \([0-9.]*\) s compiling.*/\1/p' "$tmp/train-$b.log")
  iteration_ms "$tmp/train-$b.log" >"$tmp/ms-$b"
  one=$(awk '$1 == 1 { print $2 }' "$tmp/ms-$b")
  two=$(awk '$1 == 2 { print $2 }' "$tmp/ms-$b")
  steady=$(awk '$1 > 2 { print $2 }' "$tmp/ms-$b" | median)
  printf '%-8s %10s %10.1f %10s %10s %8s %10.2f\n' "$b" "$setup" "$pre" "$one" "$two" "$steady" \
    "$(echo "$one / $steady" | bc -l)"
done
