#!/usr/bin/env bash
# The Vulkan plugin's two GEMM kernels on whatever Vulkan device is here:
# gemm_tiled.comp (128 x 128 tiles, the default on GPUs) and gemm.comp (the
# default on CPU devices such as lavapipe). CI has only lavapipe, so the GPU
# kernel is forced with KILN_VULKAN_GEMM=tiled and checked against the
# reference: every matmul case (ragged edges, transposes, batches), the
# K-chunked accumulate path under 64 KiB binding windows, and a whole GPT
# train step. A bad KILN_VULKAN_GEMM value is refused in one line.
# Prints SKIPPED and passes when the machine has no Vulkan device.
# Usage: vulkan_gemm_kernels.sh <path-to-kiln> <bad-plugin-dir>
# Not under ASan: 200 s under ASan, most of it lavapipe running the GPU GEMM
#   shader; the host's GEMM windows run under ASan in cli.vulkan_memory.
set -u
kiln=$1
fail=0
source "$(dirname "$0")/../tools/vulkan_device.sh"

expect_pass() {  # what, then the command
  local what=$1 out status
  shift
  out=$("$@" 2>&1)
  status=$?
  grep -v '^\[kiln\]' <<<"$out"
  if [ "$status" -ne 0 ] || ! grep -Eq '^summary: [0-9]+ passed, 0 failed' <<<"$out"; then
    echo "FAIL: $what"
    fail=1
  fi
}
expect_pass "gemm_tiled.comp" env KILN_VULKAN_GEMM=tiled "$kiln" check-backend vulkan --filter matmul,gpt_train_step
expect_pass "gemm_tiled.comp in 64 KiB windows" env KILN_VULKAN_GEMM=tiled KILN_VULKAN_MAX_BINDING_BYTES=65536 \
  "$kiln" check-backend vulkan --filter matmul
expect_pass "gemm.comp" env KILN_VULKAN_GEMM=simple "$kiln" check-backend vulkan --filter matmul

out=$(KILN_VULKAN_GEMM=fast "$kiln" check-backend vulkan --filter matmul 2>&1)
status=$?
if [ "$status" -eq 0 ] || ! grep -q 'KILN_VULKAN_GEMM must be tiled or simple' <<<"$out"; then
  echo "FAIL: KILN_VULKAN_GEMM=fast was not refused with a reason (exit $status)"
  fail=1
fi
exit $fail
