#!/usr/bin/env bash
# The Vulkan plugin's GEMM kernels on whatever Vulkan device is here:
# gemm_tiled.comp (128 x 128 tiles, the default on GPUs), gemm.comp (the
# default on CPU devices such as lavapipe) and gemm_coopmat.comp (tensor
# cores, bf16 and f16 operands). CI has only lavapipe, so the GPU kernel is forced
# with KILN_VULKAN_GEMM=tiled and checked against the reference: every
# matmul case (ragged edges, transposes, batches), the K-chunked accumulate
# path under 64 KiB binding windows, and a whole GPT train step. The
# tensor-core shader's emulated build (KILN_VULKAN_GEMM=coopmat-emulated)
# runs the f16 and bf16 matmul cases, also in 64 KiB windows (its
# K-chunked accumulate into an f32 C and bf16's slice scales are
# VulkanCoopmatEmulated's), and an --fp16 and a --bf16 train step on it
# must match the default kernel's loss. A bad
# KILN_VULKAN_GEMM value is refused in one line, and so is
# KILN_VULKAN_GEMM=coopmat on a device without VK_NV_cooperative_matrix.
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

if awk '$1 == "backend" { on = ($2 == "vulkan") } on && /low precision:.*16-bit storage/ { found = 1 }
    END { exit !found }' <<<"$vulkan_listing"; then
  for dt in f16 bf16; do
    expect_pass "gemm_coopmat.comp, emulated, $dt" env KILN_VULKAN_GEMM=coopmat-emulated \
      "$kiln" check-backend vulkan --dtype $dt --filter matmul
    expect_pass "gemm_coopmat.comp, emulated, $dt, in 64 KiB windows" env KILN_VULKAN_GEMM=coopmat-emulated \
      KILN_VULKAN_MAX_BINDING_BYTES=65536 "$kiln" check-backend vulkan --dtype $dt --filter matmul
  done
  # One --fp16 and one --bf16 step (--fp16's weight gradients: f16
  # operands into f32; --bf16's operands scaled per slice onto f16
  # fragments) on the emulated shader and on the default kernel: the same
  # loss, printed to 7 digits. Sequences of 128 give the unfused attention
  # chain (lavapipe's default) 4 slices of K in P.V, the later ones of a
  # tile's first rows masked to zeros (a bf16 step once went NaN there).
  # --cache-dir off: both compile here, whatever the cache holds.
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  for precision in fp16 bf16; do
    train=(train --backend vulkan --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 128
           --micro-batch-size 2 --lr 1e-2 --log-interval 1 --eval-iters 0 --hidden-dropout 0 --attention-dropout 0
           --train-iters 2 "--$precision" --cache-dir off)
    [ "$precision" = fp16 ] && train+=(--initial-loss-scale 65536)
    for kernel in coopmat-emulated default; do
      log=$tmp/$precision-$kernel.log
      if [ "$kernel" = default ]; then
        "$kiln" "${train[@]}" >"$log" 2>&1
      else
        KILN_VULKAN_GEMM=$kernel KILN_VULKAN_PROFILE=1 "$kiln" "${train[@]}" >"$log" 2>&1
      fi || { echo "FAIL: a --$precision step on the $kernel GEMM failed:"; cat "$log"; fail=1; }
    done
    grep -q ' dispatches  gemm_coopmat_emulated16$' "$tmp/$precision-coopmat-emulated.log" ||
      { echo "FAIL: --$precision with KILN_VULKAN_GEMM=coopmat-emulated ran no gemm_coopmat_emulated16"; fail=1; }
    emulated=$(grep -o 'lm loss: [0-9.E+-]*' "$tmp/$precision-coopmat-emulated.log")
    default=$(grep -o 'lm loss: [0-9.E+-]*' "$tmp/$precision-default.log")
    if [ -z "$emulated" ] || [ "$emulated" != "$default" ]; then
      echo "FAIL: --$precision losses differ: coopmat-emulated [$emulated], default [$default]"
      fail=1
    fi
  done
else
  echo "SKIPPED: gemm_coopmat.comp, emulated: the Vulkan device has no 16-bit storage"
fi

out=$(KILN_VULKAN_GEMM=fast "$kiln" check-backend vulkan --filter matmul 2>&1)
status=$?
if [ "$status" -eq 0 ] ||
  ! grep -q "KILN_VULKAN_GEMM must be tiled, simple, coopmat, coopmat-64 or coopmat-emulated, not 'fast'" <<<"$out"; then
  echo "FAIL: KILN_VULKAN_GEMM=fast was not refused with a reason (exit $status)"
  fail=1
fi
# Forced tensor cores on a device without them: refused, naming the
# extension. (On a GPU that has it, bench/gpu/run.sh runs it instead.)
if ! grep -q 'coopmat: NV' <<<"$vulkan_listing"; then
  out=$(KILN_VULKAN_GEMM=coopmat "$kiln" check-backend vulkan --dtype f16 --filter matmul 2>&1)
  status=$?
  if [ "$status" -eq 0 ] || ! grep -q 'does not list VK_NV_cooperative_matrix' <<<"$out"; then
    echo "FAIL: KILN_VULKAN_GEMM=coopmat on a device without it was not refused naming the extension (exit $status)"
    grep -v '^\[kiln\]' <<<"$out" | tail -5
    fail=1
  fi
fi
exit $fail
