#!/usr/bin/env bash
# Fused elementwise chains on the Vulkan backend (backends/vulkan/fusion.h,
# issue 33 item 3): in fp32 and --bf16, a step runs fused.comp dispatches
# and fewer dispatches in all than with KILN_VULKAN_FUSE=0, and three steps
# give the unfused run's losses and grad norms exactly (each fused stage
# rounds as the store it replaces would). Prints the dispatches per step
# both ways (docs/VULKAN.md). The conformance suite's chain cases
# (op_cases_elementwise.cpp) hold the fused kernels to the reference.
# Prints SKIPPED and passes when the machine has no Vulkan device.
# Not under ASan: its time is lavapipe compiling and running shaders
#   (uninstrumented); the fusion's host code runs under ASan in
#   BackendConformance/vulkan.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

source "$(dirname "$0")/../tools/vulkan_device.sh"

# --cache-dir off: KILN_VULKAN_FUSE is not part of the compile-cache key.
common=(--backend vulkan --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32
        --micro-batch-size 8 --lr 1e-2 --log-interval 1 --eval-iters 0 --cache-dir off)
dispatches() {  # profile log -> "total fused"
  awk '/^kiln vulkan profile/ { on = 1; next }
       on && $5 == "dispatches" { n += $4; if ($6 ~ /^fused/) f += $4 }
       END { print n + 0, f + 0 }' "$1"
}
steps() { grep -oE '(lm loss|grad norm): [^ ]*' "$1"; }

fail=0
for p in "" --bf16; do
  name=${p:-fp32}
  for fuse in 1 0; do
    KILN_VULKAN_FUSE=$fuse KILN_VULKAN_PROFILE=1 "$kiln" train "${common[@]}" $p --train-iters 1 \
      >"$tmp/profile$fuse.log" 2>&1 || { echo "FAIL: $name profiled step (fuse=$fuse):"; cat "$tmp/profile$fuse.log"; exit 1; }
    KILN_VULKAN_FUSE=$fuse "$kiln" train "${common[@]}" $p --train-iters 3 >"$tmp/train$fuse.log" 2>&1 ||
      { echo "FAIL: $name training (fuse=$fuse):"; cat "$tmp/train$fuse.log"; exit 1; }
  done
  read -r on fused < <(dispatches "$tmp/profile1.log")
  read -r off unfused < <(dispatches "$tmp/profile0.log")
  echo "$name: $off dispatches per step unfused, $on fused ($fused of them fused chains)"
  [ "$fused" -gt 0 ] && [ "$unfused" -eq 0 ] || { echo "FAIL: $name: no fused chain ran, or one ran with KILN_VULKAN_FUSE=0"; fail=1; }
  [ "$on" -lt "$off" ] || { echo "FAIL: $name: fusing did not lower the dispatch count"; fail=1; }
  [ "$(steps "$tmp/train1.log" | wc -l)" -eq 6 ] || { echo "FAIL: $name: 3 steps not logged"; cat "$tmp/train1.log"; fail=1; }
  if [ "$(steps "$tmp/train1.log")" != "$(steps "$tmp/train0.log")" ]; then
    echo "FAIL: $name: fused and unfused steps differ"; paste <(steps "$tmp/train1.log") <(steps "$tmp/train0.log"); fail=1
  fi
done
[ $fail -eq 0 ] && echo "PASS"
exit $fail
