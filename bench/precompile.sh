#!/usr/bin/env bash
# Compile cache figures (docs/CACHE.md), per backend:
#   - cold start: step graphs compiled from scratch (--cache-dir off) versus
#     loaded after `kiln precompile` (--require-precompiled): the trainer's
#     "compiled N step graphs in X s" line, which covers building every
#     executable up to the first step, not the step itself;
#   - precompile wall time with --num-parallel 1 and 2 (fresh caches);
#   - graphs built, compile units, and unique units after de-duplication.
# PoCL's own program cache is disabled (POCL_KERNEL_CACHE=0) so that "cold"
# means cold. usage: bench/precompile.sh [build-dir] [backend...]
set -euo pipefail
build=${1:-build}
shift || true
backends=("$@")
[ ${#backends[@]} -gt 0 ] || backends=(cpu opencl)
kiln=$build/bin/kiln
export POCL_KERNEL_CACHE=0
model=(--num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 64 --micro-batch-size 4
       --global-batch-size 8 --train-iters 1 --eval-iters 1 --eval-interval 1 --log-interval 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

compile_seconds() { sed -n 's/.*compiled [0-9]* step graphs in \([0-9.]*\) s.*/\1/p' "$1"; }
# Runs a command (output to $log) and prints its wall-clock seconds.
timed() {
  local log=$1 t0; shift
  t0=$(date +%s.%N)
  "$@" >"$log" 2>&1 || true
  echo "$(date +%s.%N) - $t0" | bc
}

printf '%-8s %10s %10s %8s %12s %12s %8s %14s\n' backend cold_s warm_s warm% pre_np1_s pre_np2_s speedup graphs/units/uniq
for b in "${backends[@]}"; do
  "$kiln" train "${model[@]}" --backend "$b" --cache-dir off >"$tmp/cold.log" 2>&1 || { echo "$b: unavailable"; continue; }
  cold=$(compile_seconds "$tmp/cold.log")
  np1=$(timed "$tmp/p1.log" "$kiln" precompile "${model[@]}" --backend "$b" --cache-dir "$tmp/c1-$b" --num-parallel 1)
  np2=$(timed "$tmp/p2.log" "$kiln" precompile "${model[@]}" --backend "$b" --cache-dir "$tmp/c2-$b" --num-parallel 2)
  "$kiln" train "${model[@]}" --backend "$b" --cache-dir "$tmp/c2-$b" --require-precompiled >"$tmp/warm.log" 2>&1
  warm=$(compile_seconds "$tmp/warm.log")
  counts=$(sed -n 's/precompile: extracted \([0-9]*\) graphs (\([0-9]*\) compile units) .*; \([0-9]*\) unique.*/\1\/\2\/\3/p' "$tmp/p1.log")
  printf '%-8s %10s %10s %7.1f%% %12.2f %12.2f %7.2fx %14s\n' "$b" "$cold" "$warm" "$(echo "100 * $warm / $cold" | bc -l)" \
    "$np1" "$np2" "$(echo "$np1 / $np2" | bc -l)" "$counts"
  grep "compile cache:" "$tmp/warm.log" | sed "s/^/  $b warm: /"
  # Per-unit compile times: the largest unit bounds the parallel speedup.
  "$kiln" cache ls --cache-dir "$tmp/c1-$b" | sed "s/^/  /"
  if [ "$b" = opencl ] && [ -x "$build/bin/opencl_kernel_counts" ]; then
    "$build/bin/opencl_kernel_counts" "$tmp/c2-$b" | tail -1 | sed "s/^/  /"
  fi
done
