#!/usr/bin/env bash
# The Vulkan plugin's memory paths, through the conformance suite:
#  - tensors larger than one storage-buffer binding: with
#    KILN_VULKAN_MAX_BINDING_BYTES=65536 every operand above 64 KiB is bound
#    in windows (elementwise chunks, GEMM bands along m/n/k, row chunks,
#    vocabulary bands of the embedding table), as GPT-2's 154 MB token
#    embedding is on lavapipe's 128 MiB maxStorageBufferRange;
#  - staging buffers: KILN_VULKAN_STAGING=1 keeps device memory unmapped, so
#    every host transfer goes through a staging buffer and a copy command.
# Prints SKIPPED and passes when the machine has no Vulkan device.
# Usage: vulkan_memory.sh <path-to-kiln> <bad-plugin-dir>
set -u
kiln=$1
fail=0
source "$(dirname "$0")/../tools/vulkan_device.sh"

# Ops whose every case splits into windows of 64 KiB (the others have cases
# with one operand above it that is bound whole by design: a broadcast bias,
# a permute source, embedding ids; see docs/VULKAN.md).
windowed=fill,add,mul,scale,gelu,gelu_grad,sum_to,sum_squares,adamw,matmul,layernorm,layernorm_grad,causal_softmax
windowed+=,softmax_grad,reshape,split,concat,gpt_train_step,gpt_optimizer_step
windowed+=,silu,silu_grad,clamp,clamp_grad
windowed+=,rope,rope_grad
windowed+=,cast_fp8
out=$(KILN_VULKAN_MAX_BINDING_BYTES=65536 "$kiln" check-backend vulkan --filter "$windowed" 2>&1)
status=$?
echo "$out"
if [ "$status" -ne 0 ] || ! grep -Eq '^summary: [0-9]+ passed, 0 failed' <<<"$out"; then
  echo "FAIL: check-backend vulkan with 64 KiB binding windows"
  fail=1
fi

out=$(KILN_VULKAN_STAGING=1 "$kiln" check-backend vulkan --filter matmul,embedding,cross_entropy,gpt_train_step 2>&1)
status=$?
echo "$out"
if [ "$status" -ne 0 ] || ! grep -Eq '^summary: [0-9]+ passed, 0 failed' <<<"$out"; then
  echo "FAIL: check-backend vulkan through staging buffers"
  fail=1
fi
exit $fail
