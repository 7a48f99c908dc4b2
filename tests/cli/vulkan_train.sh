#!/usr/bin/env bash
# `kiln train --backend vulkan` against `--backend cpu` on a small model:
# the loss of every one of 10 steps must agree within 1e-4 relative. Also:
# `kiln devices` lists the Vulkan device (lavapipe where Mesa's ICD is
# installed), and with no Vulkan driver at all `--backend vulkan` fails with
# a one-line reason while the cpu backend still trains.
# Prints SKIPPED and passes when the machine has no Vulkan device (or the
# plugin was not built).
# Usage: vulkan_train.sh <path-to-kiln> <bad-plugin-dir>
set -u
kiln=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

source "$(dirname "$0")/../tools/vulkan_device.sh"
grep -A3 -E '^backend vulkan ' <<<"$vulkan_listing"
# Where Mesa's lavapipe ICD is installed, it is one of the devices.
if ls /usr/share/vulkan/icd.d/lvp_icd.*.json >/dev/null 2>&1 &&
   ! awk '$1 == "backend" { on = ($2 == "vulkan") } on && /^  device [0-9]+: llvmpipe/ { found = 1 } END { exit !found }' <<<"$vulkan_listing"; then
  echo "FAIL: lavapipe is installed but kiln devices does not list an llvmpipe device under vulkan"
  fail=1
fi

# Small enough for lavapipe (one micro-batch of 2 x 32 tokens per step).
args=(--num-layers 2 --hidden-size 32 --num-attention-heads 4 --seq-length 32 --micro-batch-size 2
      --global-batch-size 2 --eval-iters 0 --eval-interval 1000)
for backend in cpu vulkan; do
  if ! "$kiln" train --backend "$backend" "${args[@]}" --train-iters 10 --log-interval 1 \
      --metrics-file "$tmp/$backend.jsonl" >"$tmp/$backend.log" 2>&1; then
    echo "FAIL: kiln train --backend $backend exited non-zero:"
    tail -5 "$tmp/$backend.log"
    exit 1
  fi
done
loss() { grep -o '"lm_loss":[^,}]*' "$1" | cut -d: -f2; }
paste <(loss "$tmp/cpu.jsonl") <(loss "$tmp/vulkan.jsonl") >"$tmp/pairs"
steps=$(grep -c . "$tmp/pairs")
if [ "$steps" -ne 10 ]; then
  echo "FAIL: expected 10 logged steps from each backend, got $steps"
  fail=1
fi
if ! awk '{ d = ($1 - $2) / $1; if (d < 0) d = -d; if (d > m) m = d;
            if (d > 1e-4) { printf "FAIL: step %d loss cpu %s vulkan %s (relative %.2e)\n", NR, $1, $2, d; bad = 1 } }
          END { printf "max relative loss difference over %d steps: %.2e\n", NR, m; exit bad }' "$tmp/pairs"; then
  fail=1
fi

# No driver: the loader finds no ICD manifest.
out=$(VK_DRIVER_FILES=/nonexistent VK_ICD_FILENAMES=/nonexistent "$kiln" train --backend vulkan --train-iters 1 \
      --eval-iters 0 2>&1)
status=$?
echo "without a driver: $out"
if [ "$status" -eq 0 ]; then echo "FAIL: --backend vulkan without a driver succeeded"; fail=1; fi
if [ "$(grep -c . <<<"$out")" -ne 1 ]; then echo "FAIL: the reason is not one line"; fail=1; fi
if ! grep -q "vulkan.*no devices.*driver" <<<"$out"; then
  echo "FAIL: the reason does not say vulkan has no devices and why"
  fail=1
fi
if ! VK_DRIVER_FILES=/nonexistent VK_ICD_FILENAMES=/nonexistent "$kiln" train --backend cpu "${args[@]}" \
    --train-iters 2 >/dev/null 2>&1; then
  echo "FAIL: the cpu backend did not train without a Vulkan driver"
  fail=1
fi
exit $fail
