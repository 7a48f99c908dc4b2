#!/usr/bin/env bash
# --bf16 and --fp16 on the OpenCL backend (docs/MIXED_PRECISION.md,
# "OpenCL"): the tiny model of mixed_precision.sh trains 30 steps in fp32,
# bf16 and fp16 (from a loss scale that does not overflow at once), and each
# 16-bit run's final loss is within 5% of the fp32 run's. Before the 16-bit
# kernels the plugin refused both flags at setup.
# Prints SKIPPED and passes when the machine has no OpenCL device.
# Not under ASan: its time is PoCL compiling and running kernels
#   (uninstrumented); the plugin's 16-bit host code runs under ASan in
#   BackendConformance/opencl and cli.opencl_train.
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

source "$(dirname "$0")/../tools/precisions.sh"
train_in_three_precisions "$tmp" opencl --backend opencl --num-layers 2 --hidden-size 32 --num-attention-heads 4 \
  --seq-length 32 --micro-batch-size 8 --lr 1e-2 --log-interval 1 --eval-iters 0 --hidden-dropout 0 --attention-dropout 0
