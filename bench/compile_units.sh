#!/usr/bin/env bash
# Per-layer compile units against whole-graph units (docs/CACHE.md, issue 20),
# measured in the same run, per backend:
#   - step time: `kiln train` alternately with KILN_COMPILE_UNITS=layers (the
#     default) and =whole, ROUNDS times each; the median "elapsed time per
#     iteration" of the iterations after the first two, per mode;
#   - cold precompile wall time (--num-parallel 2, a fresh --cache-dir) of the
#     same small model (hidden 64) with 2 and with 24 layers, and its units;
#   - cold precompile with --num-parallel 1 against 2 on the 8-layer model.
# The small model has dropout 0.1 unless DROPOUT says otherwise.
# PoCL's own program cache is off (POCL_KERNEL_CACHE=0) so that cold is cold.
# usage: [ROUNDS=3] [DROPOUT=0.1] [SKIP_STEP=1] bench/compile_units.sh [build-dir] [backend...]
#        (default backends: cpu opencl)
set -euo pipefail
build=${1:-build}
shift || true
backends=("$@")
[ ${#backends[@]} -gt 0 ] || backends=(cpu opencl)
kiln=$build/bin/kiln
export POCL_KERNEL_CACHE=0
rounds=${ROUNDS:-3}
step_model=(--num-layers 4 --hidden-size 128 --num-attention-heads 4 --seq-length 64 --micro-batch-size 4
            --global-batch-size 8 --eval-iters 1 --eval-interval 1000 --log-interval 1
            --mock-data --vocab-size 512)
# DROPOUT: the small model's --hidden-dropout and --attention-dropout
# (default Megatron's 0.1, what users train with; issue 32's figures).
dropout=${DROPOUT:-0.1}
small() {  # layers: the hidden-64 model of the precompile figures
  echo --num-layers "$1" --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2 \
    --global-batch-size 4 --train-iters 1 --eval-iters 1 --eval-interval 1 --mock-data --vocab-size 512 \
    --hidden-dropout "$dropout" --attention-dropout "$dropout"
}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Median per-iteration milliseconds of a train log, iterations 3 and later.
step_ms() {
  sed -n 's/.*iteration *\([0-9]*\)\/.*elapsed time per iteration (ms): *\([0-9.]*\).*/\1 \2/p' "$1" |
    awk '$1 > 2 { print $2 }' | sort -n | awk '{ a[NR] = $1 } END { if (NR) print a[int((NR + 1) / 2)]; else print "nan" }'
}
# Wall-clock seconds of a command (output to $log).
timed() {
  local log=$1 t0; shift
  t0=$(date +%s.%N)
  "$@" >"$log" 2>&1 || { echo "failed: $*" >&2; tail -3 "$log" >&2; }
  echo "$(date +%s.%N) - $t0" | bc
}
units() { sed -n 's/precompile: extracted \([0-9]*\) graphs (\([0-9]*\) compile units) .*; \([0-9]*\) unique.*/\2 units, \3 unique/p' "$1"; }

for b in "${backends[@]}"; do
  # The step runs share a cache (each mode's units compile once, in this probe
  # or the first round): step time, not compile time, is measured.
  step_cache=(--cache-dir "$tmp/step-$b")
  KILN_COMPILE_UNITS=whole "$kiln" train "${step_model[@]}" "${step_cache[@]}" --train-iters 1 --backend "$b" >"$tmp/probe.log" 2>&1 || { echo "$b: unavailable"; continue; }
  if [ -z "${SKIP_STEP:-}" ]; then  # SKIP_STEP=1: the precompile figures alone
  layers_ms=() whole_ms=()
  for _ in $(seq "$rounds"); do
    for mode in layers whole; do
      KILN_COMPILE_UNITS=$mode "$kiln" train "${step_model[@]}" "${step_cache[@]}" --train-iters 12 --backend "$b" >"$tmp/$mode.log" 2>&1
      ms=$(step_ms "$tmp/$mode.log")
      if [ "$mode" = layers ]; then layers_ms+=("$ms"); else whole_ms+=("$ms"); fi
    done
  done
  med() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
  l=$(med "${layers_ms[@]}") w=$(med "${whole_ms[@]}")
  printf '%s step ms (median of %d rounds): layers %s, whole %s, layers/whole %.3f  [rounds: layers %s; whole %s]\n' \
    "$b" "$rounds" "$l" "$w" "$(echo "$l / $w" | bc -l)" "${layers_ms[*]}" "${whole_ms[*]}"
  fi

  for n in 2 24; do
    # shellcheck disable=SC2046
    s=$(timed "$tmp/pre$n.log" "$kiln" precompile $(small "$n") --backend "$b" --cache-dir "$tmp/c$n-$b" --num-parallel 2)
    printf '%s cold precompile, hidden 64, %2d layers, --num-parallel 2: %6.1f s (%s)\n' "$b" "$n" "$s" "$(units "$tmp/pre$n.log")"
  done
  for np in 1 2; do
    # shellcheck disable=SC2046
    s=$(timed "$tmp/np$np.log" "$kiln" precompile $(small 8) --backend "$b" --cache-dir "$tmp/np$np-$b" --num-parallel "$np")
    printf '%s cold precompile, hidden 64, 8 layers, --num-parallel %d: %6.1f s (%s)\n' "$b" "$np" "$s" "$(units "$tmp/np$np.log")"
  done
done
