#!/usr/bin/env bash
# --bf16 and --fp16 on the Vulkan backend (docs/MIXED_PRECISION.md, "Vulkan"):
#  1. each trains the tiny model of mixed_precision.sh for 30 steps to a
#     final loss within 5% of the Vulkan fp32 run's;
#     (check_backend.sh runs --dtype bf16 on the device; `kiln check-backend
#     vulkan --dtype f16` passes the same 28 ops, left out here for CI time);
#  2. a device without storageBuffer16BitAccess (hidden by the test hook
#     KILN_VULKAN_NO_16BIT_STORAGE) refuses --bf16 at setup with one line.
# Prints SKIPPED and passes when the machine has no Vulkan device.
# Not under ASan: its time is lavapipe compiling and running shaders
#   (uninstrumented); the plugin's 16-bit host code runs under ASan in
#   BackendConformance/vulkan and cli.vulkan_train.
set -uo pipefail
kiln=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

"$kiln" devices >"$tmp/devices" 2>&1
if ! awk '$1 == "backend" { on = ($2 == "vulkan") } on && /^  device 0:/ { found = 1 } END { exit !found }' \
    "$tmp/devices"; then
  echo "SKIPPED: no Vulkan device (kiln devices found no vulkan device 0)"
  exit 0
fi
if ! awk '$1 == "backend" { on = ($2 == "vulkan") } on && /low precision:.*16-bit storage/ { found = 1 }
    END { exit !found }' "$tmp/devices"; then
  echo "SKIPPED: the Vulkan device has no 16-bit storage"
  exit 0
fi

common=(--backend vulkan --num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32
        --micro-batch-size 8 --lr 1e-2 --log-interval 1 --eval-iters 0 --hidden-dropout 0 --attention-dropout 0)
source "$(dirname "$0")/../tools/precisions.sh"

# 1. 30 steps each, within 5% of fp32.
train_in_three_precisions "$tmp" vulkan "${common[@]}" || exit 1

# 2. No 16-bit storage: refused at setup, before any step graph compiles.
if KILN_VULKAN_NO_16BIT_STORAGE=1 "$kiln" train "${common[@]}" --train-iters 1 --bf16 >"$tmp/refused.log" 2>&1; then
  echo "FAIL: --bf16 trained on a device without 16-bit storage"; exit 1
fi
grep -q -- '--bf16: the vulkan backend cannot store bf16 values (.*lacks storageBuffer16BitAccess' "$tmp/refused.log" ||
  { echo "FAIL: no one-line refusal naming the feature:"; cat "$tmp/refused.log"; exit 1; }
if grep -q "compiled .* step graphs\| iteration " "$tmp/refused.log"; then
  echo "FAIL: refused too late:"; cat "$tmp/refused.log"; exit 1
fi
[ "$(wc -l <"$tmp/refused.log")" -eq 1 ] || { echo "FAIL: the refusal is not one line:"; cat "$tmp/refused.log"; exit 1; }
echo "without storageBuffer16BitAccess: $(cat "$tmp/refused.log")"
echo "PASS"
