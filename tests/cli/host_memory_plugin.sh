#!/usr/bin/env bash
# A plugin whose buffers are host memory (ABI 1.5 buffer_host_address: the
# "hostblas" test plugin, GEMMs through oneDNN and the rest on kiln's cpu
# fallback) shares the values crossing the split instead of copying them
# (issue 37): the split log counts 0 MiB copied and the bytes shared, and
# training takes the same losses, bit for bit, as when the host copies
# (KILN_SHARE_HOST_MEMORY=0), and follows the cpu backend's. The
# "hostsplit" plugin (the same split over the cpu backend's own kernels)
# takes the cpu backend's losses exactly, and the RESHAPEs it lacks are
# views, run by no device.
set -euo pipefail
kiln=$1
plugins=$(cd "$(dirname "$kiln")/../test-plugins" && pwd)
for p in hostblas hostsplit; do
  test -f "$plugins/libkiln-backend-$p.so" || { echo "FAIL: no $p plugin in $plugins"; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export KILN_PLUGIN_PATH=$plugins
common=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 --micro-batch-size 4
        --global-batch-size 8 --train-iters 6 --log-interval 1 --eval-iters 0 --num-threads 2 --hidden-dropout 0
        --attention-dropout 0)
"$kiln" train "${common[@]}" --backend hostblas --metrics-file "$tmp/shared.jsonl" >"$tmp/shared.log" 2>&1
KILN_SHARE_HOST_MEMORY=0 "$kiln" train "${common[@]}" --backend hostblas --metrics-file "$tmp/copied.jsonl" \
  >"$tmp/copied.log" 2>&1
"$kiln" train "${common[@]}" --backend cpu --metrics-file "$tmp/cpu.jsonl" >"$tmp/cpu.log" 2>&1
"$kiln" train "${common[@]}" --backend hostsplit --metrics-file "$tmp/split.jsonl" >"$tmp/split.log" 2>&1

fail=0
per_iteration() { grep -o 'split: [0-9.]* MiB copied between hostblas and cpu per iteration.*' "$1" || true; }
shared=$(per_iteration "$tmp/shared.log"); copied=$(per_iteration "$tmp/copied.log")
echo "shared: $shared"
echo "copied: $copied"
case "$shared" in
  "split: 0.00 MiB copied between hostblas and cpu per iteration, "*" MiB shared in host memory") ;;
  *) echo "FAIL: with host memory shared the split should copy nothing"; fail=1 ;;
esac
copied_mib=$(echo "$copied" | cut -d' ' -f2)
awk -v c="$copied_mib" 'BEGIN { exit !(c > 0) }' || { echo "FAIL: KILN_SHARE_HOST_MEMORY=0 should copy"; fail=1; }
case "$copied" in *shared*) echo "FAIL: KILN_SHARE_HOST_MEMORY=0 should share nothing"; fail=1 ;; esac
grep -q "hostblas: [a-z_]* runs on the cpu fallback" "$tmp/shared.log" ||
  { echo "FAIL: the split's fallback ops are not logged"; fail=1; }

loss() { grep -o '"lm_loss":[^,]*' "$1" | cut -d: -f2; }
if [ "$(loss "$tmp/shared.jsonl")" != "$(loss "$tmp/copied.jsonl")" ]; then
  echo "FAIL: sharing memory changed the losses"; paste <(loss "$tmp/shared.jsonl") <(loss "$tmp/copied.jsonl"); fail=1
fi
paste <(loss "$tmp/shared.jsonl") <(loss "$tmp/cpu.jsonl") | awk '
  { d = $1 - $2; if (d < 0) d = -d; r = d / $2; if (r > worst) worst = r; n++ }
  END { printf "%d steps, worst relative difference from --backend cpu %.2e\n", n, worst; exit !(n == 6 && worst < 1e-4) }' ||
  { echo "FAIL: hostblas does not follow the cpu backend"; fail=1; }
if [ "$(loss "$tmp/split.jsonl")" != "$(loss "$tmp/cpu.jsonl")" ]; then
  echo "FAIL: hostsplit (the cpu's kernels, split) does not give the cpu backend's losses exactly"
  paste <(loss "$tmp/split.jsonl") <(loss "$tmp/cpu.jsonl"); fail=1
fi
grep -q "hostsplit: reshape is a view of its input's buffer" "$tmp/split.log" ||
  { echo "FAIL: the RESHAPEs hostsplit lacks are not views"; fail=1; }
exit $fail
