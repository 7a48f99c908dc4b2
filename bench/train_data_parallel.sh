#!/usr/bin/env bash
# Data-parallel throughput on the small reference config (6 layers, hidden
# 384, 6 heads, seq 256, vocab 50304, mock data): the same global batch of 8
# sequences per step on 1 rank x 2 threads (2 micro-batches of 4) and on
# 2 ranks x 1 thread (one micro-batch of 4 each, one gradient all-reduce of
# the 30M-parameter gradients per step; then with --overlap-grad-reduce, with
# --use-distributed-optimizer, and with both and --overlap-param-gather),
# and on 2 ranks as one
# tensor-parallel model.
#   usage: bench/train_data_parallel.sh [build-dir] [iters]
set -euo pipefail
build=${1:-build}; iters=${2:-6}
kiln=$build/bin/kiln
mpi_flags=(--oversubscribe --bind-to none --mca btl self,vader)
[ "$(id -u)" = 0 ] && mpi_flags+=(--allow-run-as-root)
# Shared-memory single copy (CMA) left on: turning it off, as the tests do
# for containers without ptrace, makes a 120 MB all-reduce 2-4x slower here.
args=(--hidden-dropout 0 --attention-dropout 0 --mock-data --vocab-size 50304 --num-layers 6 --hidden-size 384 --num-attention-heads 6 --seq-length 256
      --micro-batch-size 4 --global-batch-size 8 --train-iters "$iters" --log-interval 1 --eval-iters 0
      --lr-warmup-iters 1)

report() {  # name metrics-file: average of all steps but the first
  tail -n +2 "$2" | grep -o '"ms_per_iteration":[^,]*' | cut -d: -f2 | awk -v name="$1" '
    { s += $1; n++ } END { ms = s / n; printf "%-42s %8.1f ms/step %8.1f tokens/s\n", name, ms, 8 * 256 * 1000 / ms }'
}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$kiln" train "${args[@]}" --num-threads 2 --metrics-file "$tmp/one.jsonl" >/dev/null 2>&1
report "1 rank x 2 threads" "$tmp/one.jsonl"
mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${args[@]}" --num-threads 1 --metrics-file "$tmp/two.jsonl" \
  >/dev/null 2>&1
report "2 ranks x 1 thread" "$tmp/two.jsonl"
# The same with each bucket's all-reduce started as soon as backward has
# finished its gradients (per-layer compile units), not after backward.
# Megatron's default bucket (40M elements) holds all 30M parameters of this
# model, and one bucket cannot start before backward ends: 2M-element
# buckets (about 15) let the overlap work.
buckets=(--ddp-bucket-size 2000000)
mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${args[@]}" --num-threads 1 --overlap-grad-reduce "${buckets[@]}" \
  --metrics-file "$tmp/overlap.jsonl" >/dev/null 2>&1
report "2 ranks x 1 thread, --overlap-grad-reduce" "$tmp/overlap.jsonl"
# The distributed optimizer: a reduce-scatter and an all-gather instead of
# the all-reduce, and each rank runs AdamW on half the parameters.
mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${args[@]}" --num-threads 1 --use-distributed-optimizer \
  --metrics-file "$tmp/zero.jsonl" >/dev/null 2>&1
report "2 ranks x 1 thread, distributed optimizer" "$tmp/zero.jsonl"
# ... with its reduce-scatters started during backward and its all-gathers
# awaited bucket by bucket in the next forward.
mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${args[@]}" --num-threads 1 --use-distributed-optimizer \
  --overlap-grad-reduce --overlap-param-gather "${buckets[@]}" --metrics-file "$tmp/zero_overlap.jsonl" >/dev/null 2>&1
report "2 ranks x 1 thread, dist. opt., both overlaps" "$tmp/zero_overlap.jsonl"
# Tensor parallel: the same 2 ranks holding one model split in two (4
# all-reduces of [B*T, C] activations per layer per step instead of one
# gradient all-reduce).
mpirun "${mpi_flags[@]}" -np 2 "$kiln" train "${args[@]}" --num-threads 1 --tensor-model-parallel-size 2 \
  --metrics-file "$tmp/tp.jsonl" >/dev/null 2>&1
report "2 ranks TP=2 x 1 thread" "$tmp/tp.jsonl"
