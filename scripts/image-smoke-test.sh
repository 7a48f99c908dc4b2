#!/usr/bin/env bash
# The smoke tests of kiln's container image, run inside it by
# scripts/build-image.sh (mounted read-only, so a change here needs no
# rebuild). Each step prints what it checked; any failure exits non-zero.
set -euo pipefail
small=(--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 64 --micro-batch-size 2
       --global-batch-size 8 --log-interval 10 --eval-iters 0 --train-iters 20)
tmp=$(mktemp -d)

echo "== kiln devices"
kiln devices | tee "$tmp/devices"
grep -q "^backend cpu" "$tmp/devices"

echo "== kiln train --train-iters 20"
kiln train "${small[@]}" > "$tmp/train" 2>&1 || { cat "$tmp/train"; exit 1; }
grep "iteration       20/" "$tmp/train"

echo "== kiln precompile, then kiln train --require-precompiled"
export KILN_CACHE_DIR=$tmp/cache
kiln precompile "${small[@]}" > "$tmp/precompile" 2>&1 || { cat "$tmp/precompile"; exit 1; }
grep "^Total graphs" "$tmp/precompile"
kiln train "${small[@]}" --require-precompiled > "$tmp/pre" 2>&1 || { cat "$tmp/pre"; exit 1; }
grep "compile cache:" "$tmp/pre"
grep -q ", 0 compiled" "$tmp/pre"

echo "== mpirun -np 2 kiln train --tensor-model-parallel-size 2"
# No CMA (ptrace) in most containers: shared-memory copies without it.
OMPI_MCA_btl_vader_single_copy_mechanism=none mpirun -np 2 --oversubscribe --bind-to none \
  kiln train "${small[@]}" --tensor-model-parallel-size 2 --num-threads 1 > "$tmp/tp" 2>&1 || { cat "$tmp/tp"; exit 1; }
grep "tensor parallel" "$tmp/tp" | head -n 1
grep "iteration       20/" "$tmp/tp"
echo "smoke tests passed"
