#!/usr/bin/env bash
# A host-memory plugin against kiln's cpu backend (docs/PERFORMANCE.md,
# issue 37): the "hostblas" test plugin (GEMMs through oneDNN's dnnl_sgemm,
# everything else on the cpu fallback) with its buffers shared with the
# fallback (ABI 1.5), the same plugin with the host copying
# (KILN_SHARE_HOST_MEMORY=0), the "hostsplit" test plugin (the same split
# over the cpu backend's own kernels, so it differs from --backend cpu by
# the split alone), and --backend cpu, in turn, ROUNDS times each.
# Prints each one's median "elapsed time per iteration" over the iterations
# after the first two, and the split log's MiB copied and shared.
# usage: [ROUNDS=3] bench/host_memory_plugin.sh [build-dir]
set -euo pipefail
build=${1:-build}
kiln=$build/bin/kiln
export KILN_PLUGIN_PATH=$build/test-plugins
rounds=${ROUNDS:-3}
model=(--num-layers 4 --hidden-size 256 --num-attention-heads 4 --seq-length 128 --micro-batch-size 8
       --global-batch-size 8 --train-iters 12 --log-interval 1 --eval-iters 0 --mock-data --vocab-size 4096)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

run() {  # name, KILN_SHARE_HOST_MEMORY, backend
  KILN_SHARE_HOST_MEMORY=$2 "$kiln" train "${model[@]}" --backend "$3" >>"$tmp/$1.log" 2>&1
}
for r in $(seq "$rounds"); do
  run shared 1 hostblas
  run copied 0 hostblas
  run split 1 hostsplit
  run cpu 1 cpu
done
for name in shared copied split cpu; do
  median=$(grep -o 'elapsed time per iteration (ms): [0-9.]*' "$tmp/$name.log" | awk '{ print $NF }' |
    awk -v per=12 '{ i = (NR - 1) % per; if (i >= 2) print }' | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  split=$(grep -o 'split: [0-9.]* MiB copied between .* per iteration.*' "$tmp/$name.log" | head -1 || true)
  printf '%-7s %8.1f ms/iteration  %s\n' "$name" "$median" "${split:-no split}"
done
