#!/usr/bin/env bash
# --bf16 and --fp16 on the OpenCL backend (docs/MIXED_PRECISION.md,
# "OpenCL"): the tiny model of mixed_precision.sh trains 30 steps in fp32,
# bf16 and fp16 (from a loss scale that does not overflow at once), and each
# 16-bit run's final loss is within 5% of the fp32 run's. Before the 16-bit
# kernels the plugin refused both flags at setup.
# Prints SKIPPED and passes when the machine has no OpenCL device.
set -u
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$kiln" devices >"$tmp/devices" 2>&1
grep -A1 -E '^backend opencl ' "$tmp/devices" >"$tmp/opencl" || true
if ! grep -q '^  device 0:' "$tmp/opencl"; then
  echo "SKIPPED: no OpenCL device (kiln devices found no opencl device 0)"
  exit 0
fi

common=(--backend opencl --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32
        --micro-batch-size 8 --lr 1e-2 --log-interval 1 --eval-iters 0 --hidden-dropout 0 --attention-dropout 0
        --train-iters 30)
last_loss() { grep -o '"lm_loss":[^,}]*' "$1" | tail -1 | cut -d: -f2; }
fail=0
run() {
  local name=$1
  shift
  if ! "$kiln" train "${common[@]}" "$@" --metrics-file "$tmp/$name.jsonl" >"$tmp/$name.log" 2>&1; then
    echo "FAIL: kiln train --backend opencl $* exited non-zero:"
    tail -5 "$tmp/$name.log"
    exit 1
  fi
}
run fp32
run bf16 --bf16
run fp16 --fp16 --initial-loss-scale 4096
for p in bf16 fp16; do
  awk -v a="$(last_loss "$tmp/fp32.jsonl")" -v b="$(last_loss "$tmp/$p.jsonl")" -v p="$p" 'BEGIN {
    r = (b - a) / a; if (r < 0) r = -r
    printf "opencl final loss fp32 %.4f, %s %.4f: %.2f%% apart\n", a, p, b, 100 * r; exit !(r < 0.05) }' || fail=1
done
grep ' lm loss: [^|]* | loss scale: 1.0 | grad norm: ' "$tmp/bf16.log" >"$tmp/bf16.lines" || true
if [ ! -s "$tmp/bf16.lines" ]; then
  echo "FAIL: the bf16 log line has no 'loss scale: 1.0' after the loss:"
  tail -2 "$tmp/bf16.log"
  fail=1
fi
exit $fail
